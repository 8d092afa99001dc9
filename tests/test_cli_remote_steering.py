"""``kun steer`` and ``kun interrupt``: with ``--server`` a real ``kun
serve`` (its model the fake provider, stalled mid-answer) is reached by the
real ``kun`` CLI in subprocesses (see tests/test_cli_remote.py); without
one, a turn in this home is refused in one line that says where it can be
reached.

Remotely a steer is recorded as ``turn_steered`` with its text and an
interrupt as ``turn_aborted``, each printing its line; once the turn has
ended, an explicit settled turn is the server's 409 and an unknown thread
its 404, each one line and exit 1. Locally a thread with no running turn,
a turn held by another process (named) and a turn a stopped kun left open
are each one line and exit 1."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import httpx
import pytest
from click.testing import CliRunner

from kun.cli.steering import interrupted_line, steered_line
from kun.contracts import events as ev
from kun.entry import cli
from kun.store.lock import lock_thread
from kun.store.paths import lock_path
from tests.portable.conftest import stored_thread
from tests.test_cli_remote import ANSWER, Served, _one_line, _thread_of, serving
from tests.test_cli_remote_threads import STALLED

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def test_a_running_turn_is_steered_then_interrupted(tmp_path: Path) -> None:
    async with serving(tmp_path, [ANSWER, STALLED, STALLED]) as s:
        thread = _thread_of(await s.kun("run", "one"))
        turn = await _stalled_turn(s, thread, "two")
        steered = await s.kun("steer", thread, "also mention b.py")
        assert (steered.returncode, steered.stdout.decode()) == (
            0,
            steered_line(thread, turn) + "\n",
        )
        stopped = await s.kun("interrupt", thread)
        assert stopped.stdout.decode() == interrupted_line(thread, turn, "aborted") + "\n"
        events = s.events(thread)
        assert [e.text for e in events if isinstance(e, ev.TurnSteered)] == ["also mention b.py"]
        assert [(e.turn_id, e.discard) for e in events if isinstance(e, ev.TurnAborted)] == [
            (turn, False)
        ]

        none = _one_line(await s.kun("steer", thread, "more"))
        assert none == f"kun: error: thread {thread} has no running turn\n"
        assert _one_line(await s.kun("interrupt", thread)) == none
        settled = _one_line(await s.kun("interrupt", thread, "--turn", turn))
        assert settled == f"kun: error: turn {turn!r} of thread {thread!r} is not running\n"
        unknown = _one_line(await s.kun("steer", "thr_nope", "x"))
        assert unknown == "kun: error: thread 'thr_nope' not found\n"
        blank = _one_line(await s.kun("steer", thread, "  "))
        assert "TEXT is blank" in blank

        other = await _stalled_turn(s, thread, "three")
        dropped = await s.kun("interrupt", thread, "--discard")
        assert dropped.stdout.decode() == interrupted_line(thread, other, "aborted") + "\n"
        aborted = [e for e in s.events(thread) if isinstance(e, ev.TurnAborted)]
        assert (aborted[-1].turn_id, aborted[-1].discard) == (other, True)


async def _stalled_turn(s: Served, thread: str, text: str) -> str:
    """Start a turn over HTTP and wait until its model request is stalled."""
    asked = len(s.provider.requests)
    async with httpx.AsyncClient(base_url=s.url) as client:
        started = await client.post(f"/v1/threads/{thread}/turns", json={"text": text})
        assert started.status_code == 202, started.text
    with anyio.fail_after(10):
        while len(s.provider.requests) <= asked:  # noqa: ASYNC110 (another process)
            await anyio.sleep(0.05)
    turn: str = started.json()["turn_id"]
    return turn


def _kun(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stderr


def test_locally_each_refusal_is_one_line(tmp_path: Path) -> None:
    home = tmp_path / "h"
    stored_thread(home)
    code, stderr = _kun("steer", "thr_sou", "hello", "--home", str(home))
    assert (code, stderr) == (1, "kun: error: thread thr_source has no running turn\n")
    code, stderr = _kun("interrupt", "thr_none", "--home", str(home))
    assert code == 1 and "not found" in stderr and stderr.count("\n") == 1

    log = home / "threads" / "thr_open" / "events.jsonl"
    stored_thread(home, "thr_open")
    open_turn = _drop_last_line(log)
    code, stderr = _kun("interrupt", "thr_open", "--home", str(home))
    assert code == 1 and stderr.count("\n") == 1, stderr
    assert f"turn {open_turn} of thread thr_open was left open by a kun that stopped" in stderr

    fd = lock_thread("thr_open", lock_path(home, "thr_open"))
    try:
        code, stderr = _kun("steer", "thr_open", "hello", "--home", str(home))
    finally:
        os.close(fd)
    assert code == 1 and stderr.count("\n") == 1, stderr
    assert f"turn {open_turn} of thread thr_open runs in process {os.getpid()}" in stderr
    assert "steer it by typing in its session" in stderr


def _drop_last_line(log: Path) -> str:
    """Cut the thread's closing ``turn_completed``: its last turn is then
    open, as a kun that died mid-turn leaves it; answers that turn's id."""
    import msgspec

    lines = log.read_bytes().splitlines(keepends=True)
    last = msgspec.json.decode(lines[-1])
    assert last["kind"] == "turn_completed", last
    log.write_bytes(b"".join(lines[:-1]))
    turn_id: str = last["turn_id"]
    return turn_id
