"""``kun --server URL rewind | fork | compact`` as a user runs them: a real
``kun serve`` (its model the fake provider) driven by the real ``kun`` CLI
in subprocesses whose own home stays empty (see tests/test_cli_remote.py).

Each prints what the local command prints (the same formatters, fed from
the server's answer and checked against the server's log): a rewind with
--files puts the workspace back and --undo brings it all back; a fork
prints its id, or with --json its origin; compact waits for the summary.
A thread busy with a turn, an unknown thread and no server at all are one
line and exit 1."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import httpx
import pytest

from kun.cli.compact import compacted_line
from kun.cli.threads import rewound_line, undone_line
from kun.contracts import events as ev
from kun.contracts.items import Compaction
from kun.contracts.model import CompletedChunk, TextDeltaChunk
from kun.domain.reduce import replay
from kun.model.scripted import tool_reply
from kun.runtime.checkpoints import UNTRACKED_NOTE
from kun.runtime.compact_turn import NOTHING_TO_COMPACT
from kun.testing.fake_provider import FakeProvider, FakeResponse
from tests.test_cli_remote import ANSWER, Served, _free_port, _one_line, _thread_of, serving

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

WRITE_B = FakeResponse(
    chunks=tuple(tool_reply("write_file", {"path": "b.py", "content": "print('b')\n"}))
)
LONG = FakeResponse(
    chunks=(TextDeltaChunk(text="The answer goes on. " * 200), CompletedChunk(stop_reason="stop"))
)
SUMMARY = FakeResponse(
    chunks=(
        TextDeltaChunk(text="Goal: greet. Done: said hello."),
        CompletedChunk(stop_reason="stop"),
    )
)
STALLED = FakeResponse(chunks=ANSWER.chunks, stalls=((1, 60.0),))


def _out(result: object) -> str:
    assert getattr(result, "returncode", None) == 0, result
    stdout: bytes = result.stdout  # type: ignore[attr-defined]
    return stdout.decode()


async def test_rewind_with_files_and_its_undo(tmp_path: Path) -> None:
    async with serving(tmp_path, [WRITE_B, ANSWER, ANSWER]) as s:
        wrote = await s.kun("run", "write b.py", "--approval", "full-auto")
        thread = _thread_of(wrote)
        await s.kun("run", "again", "--thread", thread)
        assert (s.workspace / "b.py").exists()
        rewound = _out(await s.kun("rewind", thread, "1", "--files"))
        state = replay(s.events(thread))
        seq = next(e.seq for e in reversed(s.events(thread)) if isinstance(e, ev.ThreadRewound))
        first = state.turns[0].turn_id
        pasted = f"kun --server {s.url} rewind {thread} --undo brings them back"
        assert rewound_line(thread, 1, first, 2, seq).endswith(
            f"kun rewind {thread} --undo brings them back"
        )
        assert rewound.splitlines() == [
            rewound_line(thread, 1, first, 2, seq).replace(
                f"kun rewind {thread} --undo brings them back", pasted
            ),
            f"files: restored 1, left alone 0 ({UNTRACKED_NOTE})",
            "  b.py: removed (kun had created it)",
        ]
        assert not (s.workspace / "b.py").exists()
        assert state.visible_turns == ()
        hidden = _one_line(await s.kun("rewind", thread, "2"))
        assert "already hidden" in hidden and "HTTP" not in hidden  # the local words
        undone = _out(await s.kun("rewind", thread, "--undo"))
        assert undone.splitlines() == [
            undone_line(thread, 2, seq),
            f"files: put back 1, left alone 0 ({UNTRACKED_NOTE})",
            "  b.py: put back",
        ]
        assert (s.workspace / "b.py").read_text() == "print('b')\n"
        assert len(replay(s.events(thread)).visible_turns) == 2
        nothing = _one_line(await s.kun("rewind", thread, "--undo"))
        assert nothing == f"kun: error: thread {thread!r} has no rewind to undo\n"
    assert not s.client_home.exists()


async def test_fork_prints_the_new_thread_or_its_origin(tmp_path: Path) -> None:
    async with serving(tmp_path, [ANSWER, ANSWER]) as s:
        thread = _thread_of(await s.kun("run", "one"))
        await s.kun("run", "two", "--thread", thread)
        new = _out(await s.kun("fork", thread)).strip()
        assert new != thread and len(replay(s.events(new)).turns) == 2
        shown = json.loads(_out(await s.kun("fork", thread, "--at-turn", "1", "--json")))
        first_end = replay(s.events(thread)).turns[0]
        forked = replay(s.events(shown["thread_id"]))
        assert forked.forked_from is not None
        assert shown == {
            "thread_id": shown["thread_id"],
            "source_thread_id": thread,
            "source_seq": forked.forked_from.seq,
        }
        assert [t.turn_id for t in forked.turns] == [first_end.turn_id]
        both = _one_line(await s.kun("fork", thread, "--at-turn", "1", "--at-seq", "3"))
        assert "give --at-turn or --at-seq, not both" in both


async def test_compact_waits_for_the_summary(tmp_path: Path) -> None:
    async with serving(tmp_path, [LONG, SUMMARY]) as s:
        async with httpx.AsyncClient(base_url=s.url) as client:
            empty = await client.post("/v1/threads", json={"workspace": str(s.workspace)})
        fresh = empty.json()["thread_id"]
        assert _out(await s.kun("compact", fresh)) == (
            compacted_line(fresh, None, NOTHING_TO_COMPACT)[1] + "\n"
        )
        thread = _thread_of(await s.kun("run", "hello"))
        compacted = _out(await s.kun("compact", thread))
        turn = replay(s.events(thread)).turns[-1]
        summary = turn.items[0]
        assert isinstance(summary, Compaction) and summary.summary.endswith(
            "Goal: greet. Done: said hello."
        )
        assert compacted == compacted_line(thread, turn.turn_id, summary)[1] + "\n"
        config = _one_line(await s.kun("compact", thread, "--config", str(tmp_path / "kun.toml")))
        assert "--config does not go with --server" in config


async def test_a_busy_thread_is_one_line(tmp_path: Path) -> None:
    async with serving(tmp_path, [ANSWER, STALLED]) as s:
        thread = _thread_of(await s.kun("run", "one"))
        async with httpx.AsyncClient(base_url=s.url) as client:
            started = await client.post(f"/v1/threads/{thread}/turns", json={"text": "two"})
            assert started.status_code == 202, started.text
            with anyio.fail_after(10):
                while len(s.provider.requests) < 2:  # noqa: ASYNC110 (another process)
                    await anyio.sleep(0.05)
            for args in (("rewind", thread, "1"), ("compact", thread)):
                busy = _one_line(await s.kun(*args))
                assert f"thread {thread!r} is running turn " in busy, busy
            turn_id = started.json()["turn_id"]
            await client.post(f"/v1/threads/{thread}/turns/{turn_id}/interrupt", json={})
        unknown = _one_line(await s.kun("fork", "thr_nope"))
        assert unknown == "kun: error: thread 'thr_nope' not found\n"


async def test_no_server_is_one_line(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{_free_port()}"
    nobody = Served(url, tmp_path, tmp_path, tmp_path / "client", FakeProvider())
    for args in (
        ("rewind", "thr_x", "1"),
        ("rewind", "thr_x", "--undo"),
        ("fork", "thr_x"),
        ("compact", "thr_x"),
    ):
        stderr = _one_line(await nobody.kun(*args))
        assert stderr == f"kun: error: nothing is listening at {url} — is `kun serve` running?\n"
    home = _one_line(await nobody.kun("rewind", "thr_x", "1", "--home", str(tmp_path)))
    assert "--home does not go with --server" in home
