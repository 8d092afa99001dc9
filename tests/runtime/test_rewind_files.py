"""``rewind --files`` through real turns: kun's file tools record checkpoints,
a rewind puts the workspace back (only where nobody else changed a file),
and undoing the rewind puts the files back again (issue 13, item 1)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import anyio
import pytest
from msgspec import UNSET

from kun.contracts.events import FilesRestore
from kun.contracts.items import ToolResult
from kun.domain.reduce import replay
from kun.model.scripted import text_reply, tool_reply
from kun.runtime.checkpoints import checkpoints_of
from kun.store import log_path, read_log
from kun.store.blobs import FileBlobStore
from tests.runtime.support import Harness, SlowTool, harness, host_with

pytestmark = pytest.mark.anyio


def _write(path: str, content: str) -> list[Any]:
    return [tool_reply("write_file", {"path": path, "content": content}), text_reply("ok")]


def _edit(path: str, old: str, new: str) -> list[Any]:
    return [
        tool_reply("edit_file", {"path": path, "old_string": old, "new_string": new}),
        text_reply("ok"),
    ]


SCRIPT = [
    *_write("new.txt", "one\n"),  # turn 1: creates new.txt
    *_edit("a.py", "'a'", "'A'"),  # turn 2: edits a.py
    *_write("new.txt", "two\n"),  # turn 3: overwrites new.txt
    *_write("made.txt", "made\n"),  # turn 3': creates made.txt
    *_edit("b.py", "'b'", "'B'"),  # turn 4: edits b.py
]


async def _four_turns(h: Harness) -> list[str]:
    ids = []
    for prompt in ("create", "edit a", "overwrite", "make", "edit b"):
        turn = await h.run(prompt)
        assert turn.status == "completed", turn.error
        ids.append(turn.turn_id)
    return ids


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


async def test_file_tools_record_checkpoints_with_the_old_content_saved(tmp_path: Path) -> None:
    async with harness(tmp_path, SCRIPT, policy="full-auto") as h:
        await _four_turns(h)
        points = checkpoints_of(h.state().turns)
        assert [p.path for p in points] == ["new.txt", "a.py", "new.txt", "made.txt", "b.py"]
        created, edited, overwritten = points[0], points[1], points[2]
        assert created.before is None
        assert created.after_sha256 == _sha(b"one\n")
        blobs = FileBlobStore(log_path(h.home, h.thread_id).parent / "blobs", h.thread_id)
        assert edited.before is not None
        assert blobs.get(edited.before) == b"print('a')\n"
        assert overwritten.before is not None and blobs.get(overwritten.before) == b"one\n"


async def test_rewind_with_files_restores_created_edited_and_overwritten_files(
    tmp_path: Path,
) -> None:
    async with harness(tmp_path, SCRIPT, policy="full-auto") as h:
        ids = await _four_turns(h)
        ws = h.workspace
        seq = await h.service.rewind_thread(h.thread_id, ids[1], files=True)
        assert (ws / "new.txt").read_text() == "one\n"
        assert not (ws / "made.txt").exists()
        assert (ws / "a.py").read_text() == "print('a')\n"
        assert (ws / "b.py").read_text() == "print('b')\n"
        rewind = next(r for r in h.state().rewinds if r.seq == seq)
        assert isinstance(rewind.files, FilesRestore)
        assert sorted(p.path for p in rewind.files.restored) == [
            "a.py",
            "b.py",
            "made.txt",
            "new.txt",
        ]
        assert rewind.files.skipped == ()


async def test_a_file_changed_outside_kun_is_left_alone_and_reported(tmp_path: Path) -> None:
    async with harness(tmp_path, SCRIPT, policy="full-auto") as h:
        ids = await _four_turns(h)
        ws = h.workspace
        (ws / "a.py").write_text("mine now\n")
        (ws / "b.py").unlink()
        await h.service.rewind_thread(h.thread_id, ids[0], files=True)
        assert (ws / "a.py").read_text() == "mine now\n"
        assert not (ws / "b.py").exists()
        assert not (ws / "made.txt").exists()
        assert not (ws / "new.txt").exists()
        files = h.state().rewinds[-1].files
        assert isinstance(files, FilesRestore)
        reasons = {s.path: s.reason for s in files.skipped}
        assert set(reasons) == {"a.py", "b.py"}
        assert "changed since" in reasons["a.py"]
        assert "deleted since" in reasons["b.py"]
        assert {p.path for p in files.restored} == {"new.txt", "made.txt"}


async def test_undo_puts_the_restored_files_back_where_unchanged_since(tmp_path: Path) -> None:
    async with harness(tmp_path, SCRIPT, policy="full-auto") as h:
        ids = await _four_turns(h)
        ws = h.workspace
        await h.service.rewind_thread(h.thread_id, ids[1], files=True)
        (ws / "b.py").write_text("edited after the rewind\n")
        seq = h.state().rewinds[-1].seq
        await h.service.undo_rewind(h.thread_id, seq)
        assert (ws / "new.txt").read_text() == "two\n"
        assert (ws / "made.txt").read_text() == "made\n"
        assert (ws / "a.py").read_text() == "print('A')\n"
        assert (ws / "b.py").read_text() == "edited after the rewind\n"
        rewind = h.state().rewinds[-1]
        assert rewind.undone_at_seq is not None
        assert isinstance(rewind.undo_files, FilesRestore)
        assert [s.path for s in rewind.undo_files.skipped] == ["b.py"]


async def test_rewind_without_files_leaves_the_workspace_alone(tmp_path: Path) -> None:
    async with harness(tmp_path, SCRIPT, policy="full-auto") as h:
        ids = await _four_turns(h)
        await h.service.rewind_thread(h.thread_id, ids[0])
        assert (h.workspace / "new.txt").read_text() == "two\n"
        assert h.state().rewinds[-1].files is UNSET


async def test_binary_content_is_restored_byte_for_byte(tmp_path: Path) -> None:
    blob = bytes(range(256)) * 4
    script = [*_write("blob.bin", "text now\n")]
    async with harness(tmp_path, script, policy="full-auto") as h:
        (h.workspace / "blob.bin").write_bytes(blob)
        turn = await h.run("overwrite the binary")
        await h.service.rewind_thread(h.thread_id, turn.turn_id, files=True)
        assert (h.workspace / "blob.bin").read_bytes() == blob


async def test_the_restore_is_in_the_log_and_replays(tmp_path: Path) -> None:
    async with harness(tmp_path, SCRIPT, policy="full-auto") as h:
        ids = await _four_turns(h)
        await h.service.rewind_thread(h.thread_id, ids[2], files=True)
        live = h.state()
    replayed = replay(read_log(log_path(h.home, h.thread_id)))
    assert replayed.rewinds == live.rewinds
    files = replayed.rewinds[-1].files
    assert isinstance(files, FilesRestore) and {p.path for p in files.restored} == {
        "new.txt",
        "made.txt",
        "b.py",
    }
    results = [i for t in replayed.turns for i in t.items if isinstance(i, ToolResult)]
    assert all(r.checkpoint is not None for r in results)


async def test_a_fork_carries_the_saved_contents_and_can_restore(tmp_path: Path) -> None:
    async with harness(tmp_path, SCRIPT, policy="full-auto") as h:
        await _four_turns(h)
        fork = await h.service.fork_thread(h.thread_id)
        first = h.service.state(fork).turns[0].turn_id
        seq = await h.service.rewind_thread(fork, first, files=True)
        files = next(r for r in h.service.state(fork).rewinds if r.seq == seq).files
        assert isinstance(files, FilesRestore) and files.skipped == ()
        assert (h.workspace / "a.py").read_text() == "print('a')\n"
        assert not (h.workspace / "new.txt").exists()


async def test_changes_of_turns_an_earlier_plain_rewind_hid_are_undone_too(
    tmp_path: Path,
) -> None:
    async with harness(tmp_path, SCRIPT, policy="full-auto") as h:
        ids = await _four_turns(h)
        await h.service.rewind_thread(h.thread_id, ids[3])
        assert (h.workspace / "b.py").read_text() == "print('B')\n"
        await h.service.rewind_thread(h.thread_id, ids[1], files=True)
        assert (h.workspace / "b.py").read_text() == "print('b')\n"
        assert (h.workspace / "a.py").read_text() == "print('a')\n"
        files = h.state().rewinds[-1].files
        assert isinstance(files, FilesRestore) and files.skipped == ()


async def test_a_second_files_rewind_further_back_follows_the_first_restore(
    tmp_path: Path,
) -> None:
    async with harness(tmp_path, SCRIPT, policy="full-auto") as h:
        ids = await _four_turns(h)
        await h.service.rewind_thread(h.thread_id, ids[2], files=True)
        assert (h.workspace / "new.txt").read_text() == "one\n"
        await h.service.undo_rewind(h.thread_id, h.state().rewinds[-1].seq)
        await h.service.rewind_thread(h.thread_id, ids[2], files=True)
        await h.service.rewind_thread(h.thread_id, ids[0], files=True)
        assert not (h.workspace / "new.txt").exists()
        assert (h.workspace / "a.py").read_text() == "print('a')\n"
        files = h.state().rewinds[-1].files
        assert isinstance(files, FilesRestore) and files.skipped == ()


def test_restoring_twice_finds_the_files_already_restored(tmp_path: Path) -> None:
    """What a crash between the restore and its event leaves: running the
    same restore again finds nothing to do and overwrites nothing."""
    from kun.contracts.items import FileCheckpoint
    from kun.runtime.checkpoints import restore
    from kun.store.blobs import MemoryBlobStore, blob_ref

    blobs = MemoryBlobStore("t")
    (tmp_path / "f").write_text("new\n")
    old = blobs.put(b"old\n")
    points = [FileCheckpoint(path="f", before=old, after_sha256=blob_ref(b"new\n").sha256)]
    first = restore(tmp_path, blobs, points)
    assert [p.path for p in first.restored] == ["f"]
    again = restore(tmp_path, blobs, points)
    assert again.restored == () and again.skipped == ()
    assert (tmp_path / "f").read_text() == "old\n"


async def test_changes_of_a_turn_interrupted_with_discard_are_undone(tmp_path: Path) -> None:
    started = anyio.Event()
    script = [
        tool_reply("write_file", {"path": "gone.txt", "content": "x\n"}),
        tool_reply("slow", {}, call_id="c2"),
    ]
    tools = host_with(SlowTool(started=started))
    async with harness(tmp_path, script, policy="full-auto", tools=tools) as h:
        turn_id = await h.service.start_turn(h.thread_id, "write then wait")
        with anyio.fail_after(10):
            await started.wait()
        await h.service.interrupt_turn(h.thread_id, turn_id, discard=True)
        with anyio.fail_after(10):
            turn = await h.service.wait_turn(h.thread_id, turn_id)
        assert turn.discarded_items > 0 and (h.workspace / "gone.txt").exists()
        await h.service.rewind_thread(h.thread_id, turn_id, files=True)
        assert not (h.workspace / "gone.txt").exists()


async def test_a_workspace_that_is_gone_leaves_everything_alone(tmp_path: Path) -> None:
    async with harness(tmp_path, SCRIPT, policy="full-auto") as h:
        ids = await _four_turns(h)
        moved = tmp_path / "elsewhere"
        h.workspace.rename(moved)
        await h.service.rewind_thread(h.thread_id, ids[0], files=True)
        files = h.state().rewinds[-1].files
        assert isinstance(files, FilesRestore) and files.restored == ()
        assert {s.path for s in files.skipped} == {"new.txt", "a.py", "made.txt", "b.py"}
        assert all("is not a directory now" in s.reason for s in files.skipped)
        assert (moved / "new.txt").read_text() == "two\n"
