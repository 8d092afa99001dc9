"""Trash, restore, gc and reconcile through the in-process adapter; a
thread a turn runs in is refused, paths are relative to the home."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from kun.app.requests import StartTurn
from kun.errors import UserMistake
from kun.model.scripted import text_reply, tool_reply
from kun.store.errors import ThreadLocked, ThreadNotFound
from kun.store.lock import lock_thread
from kun.store.paths import lock_path
from tests.app.support import local
from tests.runtime.support import SlowTool, host_with

pytestmark = pytest.mark.anyio


async def test_trash_list_and_restore(tmp_path: Path) -> None:
    async with local(tmp_path) as t:
        thread = await t.new_thread()
        trashed = await t.kun.trash_thread(thread[:12])
        assert trashed.thread_id == thread and trashed.entry.startswith(f"{thread}-")
        assert (t.home / "trash" / trashed.entry).is_dir()
        with pytest.raises(ThreadNotFound):
            await t.kun.thread(thread)
        (entry,) = (await t.kun.trash()).entries
        assert (entry.entry, entry.thread_id) == (trashed.entry, thread) and entry.removed_at > 0
        restored = await t.kun.restore_thread(entry.entry)
        assert restored.thread_id == thread and (await t.kun.thread(thread)).thread_id == thread
        with pytest.raises(UserMistake, match="in the trash"):
            await t.kun.restore_thread(entry.entry)


async def test_a_busy_or_locked_thread_is_refused(tmp_path: Path) -> None:
    started = anyio.Event()
    tools = host_with(SlowTool(started=started))
    async with local(tmp_path, [tool_reply("slow")], tools=tools) as t:
        busy = await t.new_thread()
        turn = await t.kun.start_turn(busy, StartTurn(text="work"))
        await started.wait()
        with pytest.raises(ThreadLocked, match="has a turn running"):
            await t.kun.trash_thread(busy)
        with pytest.raises(ThreadLocked, match="has a turn running"):
            await t.kun.collect(busy)
        await t.kun.interrupt(busy, turn.turn_id)
        other = await t.new_thread()
        fd = lock_thread(other, lock_path(t.home, other))
        try:
            with pytest.raises(ThreadLocked):
                await t.kun.trash_thread(other)
        finally:
            import os

            os.close(fd)
        assert (await t.kun.trash_thread(other)).thread_id == other


async def test_gc_after_a_rewind_then_confirm(tmp_path: Path) -> None:
    async with local(tmp_path, [text_reply("one"), text_reply("two")]) as t:
        thread = await t.new_thread()
        await t.run(thread, "first")
        await t.run(thread, "second")
        nothing = await t.kun.collect(thread)
        assert nothing.generation is None
        await t.kun.rewind(thread, "2")
        collected = await t.kun.collect(thread)
        assert collected.generation == f"threads/{thread}/generations/1"
        assert collected.turns == 1 and collected.events > 0
        freed = await t.kun.collect(thread, confirm=True)
        assert freed.freed > 0 and freed.generation is None
        assert len((await t.kun.thread(thread)).turns) == 1


async def test_reconcile_with_nothing_left_running(tmp_path: Path) -> None:
    async with local(tmp_path, [text_reply("one")]) as t:
        thread = await t.new_thread()
        await t.run(thread, "first")
        done = await t.kun.reconcile()
        assert done.reconciled == [] and done.skipped == {}


async def test_reconcile_settles_a_dead_processs_turn_and_closes_cleanly(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The goal's resume it schedules is left to a kun that runs turns: the
    adapter closing cancels it, rather than waiting to fail it without a model."""
    async with local(tmp_path, [text_reply("one")]) as t:
        thread = await t.new_thread()
        await t.kun.set_goal(thread, "ship it")
        await t.run(thread, "first")
        _, log = await t.kun.log_file(thread)
    lines = log.read_bytes().splitlines(keepends=True)
    ended = max(i for i, line in enumerate(lines) if b'"turn_completed"' in line)
    log.write_bytes(b"".join(lines[:ended]))
    with anyio.fail_after(10):
        async with local(tmp_path) as t:
            done = await t.kun.reconcile()
            assert done.reconciled == [thread]
            assert (await t.kun.thread(thread)).turns[-1].status == "failed"
    assert [r.getMessage() for r in caplog.records if r.levelname == "ERROR"] == []
