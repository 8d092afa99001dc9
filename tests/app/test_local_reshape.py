"""Rewind, undo, fork, export and import through the in-process adapter."""

from __future__ import annotations

import os
import tarfile
from pathlib import Path

import pytest

from kun.domain.turnref import NothingToUndo
from kun.model.scripted import text_reply
from tests.app.support import local

pytestmark = pytest.mark.anyio


async def test_rewind_undo_and_fork_at_a_turn(tmp_path: Path) -> None:
    async with local(tmp_path, [text_reply("one"), text_reply("two")]) as t:
        thread = await t.new_thread()
        await t.run(thread, "first")
        second = await t.run(thread, "second")
        done = await t.kun.rewind(thread[:12], "2")
        assert (done.turn_id, done.turn_number, done.hidden) == (second.turn_id, 2, 1)
        assert done.files is None and done.files_note is None
        undone = await t.kun.undo_rewind(thread)
        assert (undone.rewind_seq, undone.restored) == (done.seq, 1)
        with pytest.raises(NothingToUndo):
            await t.kun.undo_rewind(thread)
        forked = await t.kun.fork(thread, at_turn="1")
        assert forked.source_thread_id == thread
        assert len((await t.kun.thread(forked.thread_id)).turns) == 1


async def test_export_then_import_beside_it(tmp_path: Path) -> None:
    async with local(tmp_path, [text_reply("one")]) as t:
        thread = await t.new_thread()
        await t.run(thread, "first")
        events = (await t.kun.thread(thread)).last_seq
        plain = tmp_path / "bundle.kun"
        exported = await t.kun.export_thread(thread, plain, compress=False)
        assert exported.thread_id == thread and exported.events == events
        with tarfile.open(plain, "r:") as tar:
            assert tar.getmembers()
        assert [name for name in os.listdir(tmp_path) if name.startswith(".")] == []
        packed = tmp_path / "bundle.tar.gz"
        await t.kun.export_thread(thread, packed)
        same = await t.kun.import_thread(packed)
        assert same.outcome == "already_imported" and same.thread_id == thread
        copy = await t.kun.import_thread(plain, as_id="thr_copy")
        assert copy.outcome == "imported" and copy.events == events
        assert (await t.kun.thread("thr_copy")).turns[0].status == "completed"


async def test_a_fork_inside_a_turn_says_what_it_cut(tmp_path: Path) -> None:
    async with local(tmp_path, [text_reply("one")]) as t:
        thread = await t.new_thread()
        turn = await t.run(thread, "first")
        inside = turn.started_seq + 1
        forked = await t.kun.fork(thread, at_seq=inside)
        assert forked.cut is not None
        assert forked.cut.startswith(f"seq {inside} is inside turn 1 ({turn.turn_id})")
        whole = await t.kun.fork(thread, at_turn="1")
        assert whole.cut is None


async def test_usage_says_what_reading_the_log_skipped(tmp_path: Path) -> None:
    async with local(tmp_path, [text_reply("one")]) as t:
        thread = await t.new_thread()
        await t.run(thread, "first")
        _, log = await t.kun.log_file(thread)
        with log.open("ab") as file:
            file.write(b"{not json\n")
        (usage,) = (await t.kun.usage(thread)).threads
        assert usage.notes == ("skipped 1 unreadable line",) and usage.skipped_lines == 1


async def test_an_export_over_a_file_is_refused_unless_forced(tmp_path: Path) -> None:
    from kun.portable.errors import BundleRefused

    async with local(tmp_path, [text_reply("one")]) as t:
        thread = await t.new_thread()
        for name, compress in (("b.kun", False), ("b.tar.gz", True)):
            out = tmp_path / name
            out.write_bytes(b"mine")
            with pytest.raises(BundleRefused, match="file exists"):
                await t.kun.export_thread(thread, out, compress=compress)
            assert out.read_bytes() == b"mine"
            await t.kun.export_thread(thread, out, compress=compress, force=True)
            assert out.read_bytes() != b"mine"
