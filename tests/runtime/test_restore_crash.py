"""SIGKILL ``kun rewind --files`` at each boundary of a file restore; the next
open records exactly what the disk says, and undoing the rewind then puts
the workspace back as it was before it.

The child is the real CLI in its own process, with the restore's file step
wrapped so that the process kills itself (SIGKILL: no cleanup, no flush)
right after the intent is durable and before the first file changes,
between the two files, or after both files and before the outcome. The
parent then reads the log the child left and settles it, through
``kun reconcile`` or straight through ``kun rewind --undo``.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner
from msgspec import UNSET

from kun.app.session import open_service
from kun.contracts import events as ev
from kun.domain.reduce import replay
from kun.entry import cli
from kun.model.scripted import ScriptedModelClient, text_reply, tool_reply
from kun.runtime.restore_recovery import NOT_REACHED, SOMEONE_ELSE
from kun.store.jsonl import JsonlEventStore
from tests.runtime.support import harness

CHILD = """
import os, signal, sys
import kun.runtime.checkpoints as cp
from kun.app.session import open_service
from kun.entry import cli

home, thread, boundary = sys.argv[1:]
real_apply, real_carry_out = cp._apply, cp.carry_out
applied = 0

def apply(root, blobs, action):
    global applied
    if boundary == f"before_file_{applied}":
        os.kill(os.getpid(), signal.SIGKILL)
    real_apply(root, blobs, action)
    applied += 1

def carry_out(*args):
    done = real_carry_out(*args)
    if boundary == "before_outcome":
        os.kill(os.getpid(), signal.SIGKILL)
    return done

cp._apply, cp.carry_out = apply, carry_out
cli.main(args=["rewind", thread, "2", "--files", "--home", home], prog_name="kun")
"""

EDITED, ORIGINAL, CREATED = "print('A')\n", "print('a')\n", "new\n"


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def _two_turns(tmp_path: Path) -> tuple[str, Path]:
    """Turn 1 answers; turn 2 edits a.py and creates new.txt: a rewind
    before turn 2 plans two changes, a.py first."""
    script = [
        text_reply("hello"),
        tool_reply("edit_file", {"path": "a.py", "old_string": "'a'", "new_string": "'A'"}),
        tool_reply("write_file", {"path": "new.txt", "content": CREATED}, call_id="c2"),
        text_reply("ok"),
    ]

    async def go() -> tuple[str, Path]:
        async with harness(tmp_path, script, policy="full-auto") as h:
            for prompt in ("hello", "edit"):
                turn = await h.run(prompt)
                assert turn.status == "completed", turn.error
            return h.thread_id, h.workspace

    return anyio.run(go)


def _kill_rewind(tmp_path: Path, boundary: str) -> tuple[str, Path, Path]:
    thread, ws = _two_turns(tmp_path)
    home = tmp_path / "home"
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(home), thread, boundary],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    return thread, ws, home


def _events(home: Path, thread: str) -> list[ev.Event]:
    return list(JsonlEventStore(home).read(thread, mode="strict"))


def _files(ws: Path) -> tuple[str, str | None]:
    new = ws / "new.txt"
    return (ws / "a.py").read_text(), new.read_text() if new.exists() else None


# boundary -> (files on disk after the kill, paths recorded as restored)
CASES = {
    "before_file_0": ((EDITED, CREATED), []),
    "before_file_1": ((ORIGINAL, CREATED), ["a.py"]),
    "before_outcome": ((ORIGINAL, None), ["a.py", "new.txt"]),
}


@pytest.mark.parametrize("boundary", sorted(CASES))
def test_a_killed_restore_is_recorded_as_the_disk_says_and_undone(
    tmp_path: Path, boundary: str
) -> None:
    on_disk, restored = CASES[boundary]
    thread, ws, home = _kill_rewind(tmp_path, boundary)
    assert _files(ws) == on_disk
    left = _events(home, thread)
    intent = left[-1]
    assert isinstance(intent, ev.FilesRestoreStarted), "the intent is the last durable event"
    assert [p.path for p in intent.planned] == ["a.py", "new.txt"]
    assert replay(_events(home, thread)).restoring == intent
    code, shown, _ = _run("replay", thread, "--home", str(home))
    assert code == 0 and "stopped before it finished; it was to change a.py, new.txt" in shown

    code, out, err = _run("reconcile", "--home", str(home))
    assert code == 0, err
    assert thread in out
    after = _events(home, thread)
    assert after[: len(left)] == left, "settling only appends"
    (outcome,) = after[len(left) :]
    assert isinstance(outcome, ev.ThreadRewound) and outcome.files is not None
    assert outcome.before_turn_id == intent.before_turn_id
    assert [p.path for p in outcome.files.restored] == restored
    not_reached = {"a.py", "new.txt"} - set(restored)
    assert {(s.path, s.reason) for s in outcome.files.skipped} == {
        (path, NOT_REACHED) for path in not_reached
    }
    assert _files(ws) == on_disk, "settling writes no file"
    state = replay(_events(home, thread))
    assert state.restoring is UNSET
    assert [t.hidden_by for t in state.turns] == [None, outcome.seq]
    code, out, _ = _run("reconcile", "--home", str(home))
    assert thread not in out, "a second reconciliation finds nothing"
    code, shown, _ = _run("replay", thread, "--home", str(home))
    assert "stopped before it finished" not in shown
    assert f"files restored by the rewind at seq {outcome.seq}" in shown

    code, out, err = _run("rewind", thread, "--undo", "--home", str(home))
    assert code == 0, err
    assert _files(ws) == (EDITED, CREATED), "the workspace is as before the rewind"
    assert all(t.hidden_by is None for t in replay(_events(home, thread)).turns)


def test_the_undo_settles_a_killed_restore_first(tmp_path: Path) -> None:
    thread, ws, home = _kill_rewind(tmp_path, "before_file_1")
    code, out, err = _run("rewind", thread, "--undo", "--home", str(home))
    assert code == 0, err
    assert "files: put back 1, left alone 0" in out
    assert _files(ws) == (EDITED, CREATED)
    kinds = [type(e).__name__ for e in _events(home, thread)[-4:]]
    assert kinds == [
        "FilesRestoreStarted",
        "ThreadRewound",
        "FilesRestoreStarted",
        "ThreadRewindUndone",
    ]


def test_a_file_changed_after_the_kill_is_never_overwritten(tmp_path: Path) -> None:
    thread, ws, home = _kill_rewind(tmp_path, "before_file_1")
    (ws / "a.py").write_text("mine\n")
    (ws / "new.txt").write_text("mine too\n")
    code, _, err = _run("reconcile", "--home", str(home))
    assert code == 0, err
    outcome = _events(home, thread)[-1]
    assert isinstance(outcome, ev.ThreadRewound) and outcome.files is not None
    assert outcome.files.restored == ()
    assert {(s.path, s.reason) for s in outcome.files.skipped} == {
        ("a.py", SOMEONE_ELSE),
        ("new.txt", SOMEONE_ELSE),
    }
    code, out, err = _run("rewind", thread, "--undo", "--home", str(home))
    assert code == 0, err
    assert "files: nothing to put back" in out
    assert _files(ws) == ("mine\n", "mine too\n")


def test_a_new_turn_settles_a_killed_restore_before_it_starts(tmp_path: Path) -> None:
    thread, ws, home = _kill_rewind(tmp_path, "before_outcome")

    async def go() -> None:
        async with open_service(home, ScriptedModelClient([text_reply("again")])) as service:
            await service.recorder.open(thread)
            turn_id = await service.start_turn(thread, "again")
            assert (await service.wait_turn(thread, turn_id)).status == "completed"

    anyio.run(go)
    events = _events(home, thread)
    start = max(i for i, e in enumerate(events) if isinstance(e, ev.TurnStarted))
    settled = [e for e in events[:start] if isinstance(e, ev.ThreadRewound)]
    outcome = settled[-1]
    assert outcome.files is not None
    assert isinstance(events[events.index(outcome) - 1], ev.FilesRestoreStarted)
    assert [p.path for p in outcome.files.restored] == ["a.py", "new.txt"]
    assert _files(ws) == (ORIGINAL, None)
