"""``rewind --files`` on an imported thread: the checkpoints recorded before
the import (``thread_imported``) name files kun did not write here, so they
are reported and left alone; the turns run after it restore as usual. The
rule survives undo, fork (even at a point before the import) and ``kun gc``
(which renumbers the marker with the rest)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import anyio
import pytest

from kun.app.cleanup import collect
from kun.contracts.events import FilesRestore
from kun.domain.checkpoints import IMPORTED
from kun.model.scripted import text_reply, tool_reply
from kun.portable.bundle import export_thread
from kun.portable.unbundle import import_bundle
from tests.runtime.support import Harness, harness

pytestmark = pytest.mark.anyio


def _write(path: str, content: str) -> list[Any]:
    return [tool_reply("write_file", {"path": path, "content": content}), text_reply("ok")]


SCRIPT = [
    *_write("new.txt", "one\n"),  # turn 1, before the import
    *[tool_reply("edit_file", {"path": "a.py", "old_string": "'a'", "new_string": "'A'"})],
    text_reply("ok"),  # turn 2, before the import
    *_write("made.txt", "made\n"),  # turn 3, on the imported copy
]


async def _copy(h: Harness, tmp_path: Path) -> Harness:
    """Export ``h``'s thread and import it into the same home as ``thr_copy``
    (same workspace path: the most a benign bundle could get right)."""
    bundle = tmp_path / "t.kun.tar"
    await anyio.to_thread.run_sync(lambda: export_thread(h.home, h.thread_id, bundle))
    await anyio.to_thread.run_sync(lambda: import_bundle(h.home, bundle, as_id="thr_copy"))
    await h.service.recorder.open("thr_copy")
    return dataclasses.replace(h, thread_id="thr_copy")


async def _turns(h: Harness, *prompts: str) -> list[str]:
    ids = []
    for prompt in prompts:
        turn = await h.run(prompt)
        assert turn.status == "completed", turn.error
        ids.append(turn.turn_id)
    return ids


def _files(h: Harness, *, undo: bool = False) -> FilesRestore:
    rewind = h.state().rewinds[-1]
    done = rewind.undo_files if undo else rewind.files
    assert isinstance(done, FilesRestore)
    return done


def _skipped(done: FilesRestore) -> dict[str, str]:
    return {s.path: s.reason for s in done.skipped}


async def test_old_checkpoints_are_left_alone_and_new_ones_restore(tmp_path: Path) -> None:
    async with harness(tmp_path, SCRIPT, policy="full-auto") as h:
        first, _ = await _turns(h, "create", "edit a")
        copy = await _copy(h, tmp_path)
        await _turns(copy, "make")
        ws = h.workspace
        await copy.service.rewind_thread(copy.thread_id, first, files=True)
        done = _files(copy)
        assert [p.path for p in done.restored] == ["made.txt"]
        assert _skipped(done) == {"new.txt": IMPORTED, "a.py": IMPORTED}
        assert not (ws / "made.txt").exists()
        assert (ws / "new.txt").read_text() == "one\n"
        assert (ws / "a.py").read_text() == "print('A')\n"
        await copy.service.undo_rewind(copy.thread_id, copy.state().rewinds[-1].seq)
        assert (ws / "made.txt").read_text() == "made\n"
        assert [p.path for p in _files(copy, undo=True).restored] == ["made.txt"]


async def test_a_rewind_recorded_before_the_import_is_not_undone_on_the_files(
    tmp_path: Path,
) -> None:
    async with harness(tmp_path, SCRIPT, policy="full-auto") as h:
        _, second = await _turns(h, "create", "edit a")
        seq = await h.service.rewind_thread(h.thread_id, second, files=True)
        ws = h.workspace
        assert (ws / "a.py").read_text() == "print('a')\n"
        copy = await _copy(h, tmp_path)
        await copy.service.undo_rewind(copy.thread_id, seq)
        assert _skipped(_files(copy, undo=True)) == {"a.py": IMPORTED}
        assert _files(copy, undo=True).restored == ()
        assert (ws / "a.py").read_text() == "print('a')\n"


@pytest.mark.parametrize("at_import", [True, False], ids=["at-the-end", "before-the-import"])
async def test_a_fork_of_an_imported_thread_keeps_the_rule(tmp_path: Path, at_import: bool) -> None:
    async with harness(tmp_path, SCRIPT, policy="full-auto") as h:
        first, _ = await _turns(h, "create", "edit a")
        copy = await _copy(h, tmp_path)
        point = None if at_import else copy.state().turns[1].started_seq - 1
        fork = dataclasses.replace(
            copy, thread_id=await copy.service.fork_thread(copy.thread_id, point)
        )
        await fork.service.rewind_thread(fork.thread_id, first, files=True)
        done = _files(fork)
        assert done.restored == ()
        assert set(_skipped(done).values()) == {IMPORTED}
        assert (h.workspace / "new.txt").read_text() == "one\n"


async def test_gc_renumbers_the_mark_with_the_events_it_covers(tmp_path: Path) -> None:
    async with harness(tmp_path, SCRIPT, policy="full-auto") as h:
        first, second = await _turns(h, "create", "edit a")
        await h.service.rewind_thread(h.thread_id, second)
        bundle = tmp_path / "t.kun.tar"
        await anyio.to_thread.run_sync(lambda: export_thread(h.home, h.thread_id, bundle))
        await anyio.to_thread.run_sync(lambda: import_bundle(h.home, bundle, as_id="thr_copy"))
        report = await anyio.to_thread.run_sync(lambda: collect(h.home, "thr_copy"))
        assert report.events > 0
        await h.service.recorder.open("thr_copy")
        copy = dataclasses.replace(h, thread_id="thr_copy")
        assert copy.state().imported_through == copy.state().last_seq
        await _turns(copy, "make")
        await copy.service.rewind_thread(copy.thread_id, first, files=True)
        done = _files(copy)
        assert [p.path for p in done.restored] == ["made.txt"]
        assert _skipped(done) == {"new.txt": IMPORTED}
        assert (h.workspace / "new.txt").read_text() == "one\n"
