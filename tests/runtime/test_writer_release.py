"""The service holds a thread's writer lock only while something writes it
(:mod:`kun.runtime.service`): a turn (waiting at an approval included) or
one write; reads never take it. Another process (here another store,
recorder and service over the same home) then writes the thread between
two of ours, and what it wrote is taken in (state, followers) before ours."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest

from kun.contracts import events as ev
from kun.contracts.items import AssistantText
from kun.model.scripted import ScriptedModelClient, text_reply, tool_reply
from kun.runtime.recorder import EventRecorder
from kun.runtime.service import TurnService
from kun.store import ThreadLocked
from kun.store.jsonl import JsonlEventStore
from tests.runtime.support import builtin_host, harness

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def other_process(home: Path, *replies: object) -> AsyncIterator[TurnService]:
    """A second writer over ``home``, as another kun process would be."""
    store = JsonlEventStore(home)
    model = ScriptedModelClient(list(replies))
    async with store, EventRecorder(store) as recorder, anyio.create_task_group() as tg:
        yield TurnService(recorder, tg, model=model, tools=builtin_host())
        tg.cancel_scope.cancel()


def _texts(service: TurnService, thread_id: str) -> list[str]:
    return [
        item.text
        for turn in service.state(thread_id).turns
        for item in turn.items
        if isinstance(item, AssistantText)
    ]


async def test_an_idle_thread_is_not_held_and_another_writer_takes_its_turn(
    tmp_path: Path,
) -> None:
    async with harness(tmp_path, [text_reply("first"), text_reply("third")]) as h:
        store = h.service.recorder.store
        assert isinstance(store, JsonlEventStore)
        await h.run("one")
        assert not store.holds(h.thread_id)
        follower = h.service.recorder.subscribe(h.thread_id, after=h.state().last_seq)
        async with other_process(h.home, text_reply("second")) as other:
            await other.open_thread(h.thread_id)
            turn_id = await other.start_turn(h.thread_id, "two")
            with anyio.fail_after(10):
                await other.wait_turn(h.thread_id, turn_id)
        seen = await h.service.recorder.view(h.thread_id)
        assert not store.holds(h.thread_id)
        assert [t.status for t in seen.turns] == ["completed", "completed"]
        with anyio.fail_after(5):
            async for event in follower:
                if isinstance(event, ev.TurnCompleted):
                    break
        await h.run("three")
        assert _texts(h.service, h.thread_id) == ["first", "second", "third"]
    on_disk = [e.seq for e in JsonlEventStore(h.home).read(h.thread_id)]
    assert on_disk == list(range(1, len(on_disk) + 1))


async def test_a_write_after_another_writer_takes_in_its_events_first(tmp_path: Path) -> None:
    async with harness(tmp_path, [text_reply("first")]) as h:
        await h.run("one")
        async with other_process(h.home, text_reply("second")) as other:
            await other.open_thread(h.thread_id)
            turn_id = await other.start_turn(h.thread_id, "two")
            with anyio.fail_after(10):
                await other.wait_turn(h.thread_id, turn_id)
        await h.service.update_thread(h.thread_id, title="renamed")
        state = h.state()
        assert len(state.turns) == 2 and state.settings.title == "renamed"


async def test_a_turn_waiting_for_an_approval_keeps_the_thread(tmp_path: Path) -> None:
    script = [tool_reply("write_file", {"path": "c.py", "content": "x"}), text_reply("done")]
    async with harness(tmp_path, script, policy="auto") as h:
        turn_id = await h.service.start_turn(h.thread_id, "write")
        with anyio.fail_after(5):
            async for event in h.service.recorder.subscribe(h.thread_id):
                if isinstance(event, ev.ApprovalRequested):
                    approval_id = event.approval_id
                    break
        async with JsonlEventStore(h.home) as other:
            with pytest.raises(ThreadLocked):
                await other.claim(h.thread_id)
        await h.service.answer_approval(approval_id, "approved")
        with anyio.fail_after(10):
            await h.service.wait_turn(h.thread_id, turn_id)
        async with JsonlEventStore(h.home) as other:
            await other.claim(h.thread_id)


async def test_reading_a_thread_never_takes_its_lock(tmp_path: Path) -> None:
    async with harness(tmp_path, [text_reply("first")]) as h:
        await h.run("one")
        async with other_process(h.home) as other:
            seen = await other.recorder.view(h.thread_id)
            assert len(seen.turns) == 1
            store = other.recorder.store
            assert isinstance(store, JsonlEventStore) and not store.holds(h.thread_id)
            await h.service.update_thread(h.thread_id, title="while read")
            assert (await other.recorder.view(h.thread_id)).settings.title == "while read"


async def test_a_follower_sees_a_turn_another_writer_runs_without_any_read(
    tmp_path: Path,
) -> None:
    """Nothing is published here for another process's events: the
    recorder looks at the log's end of the threads followed here."""
    async with harness(tmp_path, [text_reply("first")]) as h:
        await h.run("one")
        after = h.state().last_seq
        follower = h.service.recorder.subscribe(h.thread_id, after=after)
        seen: list[ev.Event] = []

        async def follow() -> None:
            with anyio.fail_after(10):
                async for event in follower:
                    seen.append(event)
                    if isinstance(event, ev.TurnCompleted):
                        return

        async with anyio.create_task_group() as tg:
            tg.start_soon(follow)
            async with other_process(h.home, text_reply("second")) as other:
                await other.open_thread(h.thread_id)
                turn_id = await other.start_turn(h.thread_id, "two")
                with anyio.fail_after(10):
                    await other.wait_turn(h.thread_id, turn_id)
        assert [e.seq for e in seen] == list(range(after + 1, after + 1 + len(seen)))
        assert all(e.turn_id == turn_id for e in seen if e.turn_id is not None)


async def test_a_log_replaced_while_released_is_read_again_whole(tmp_path: Path) -> None:
    """Another process put a different, shorter log in its place (an import
    that replaced it): the projection is rebuilt, not extended."""
    import shutil

    async with harness(tmp_path, [text_reply("first"), text_reply("second")]) as h:
        await h.run("one")
        await h.run("two")
        shutil.rmtree(h.home / "threads" / h.thread_id)
        async with other_process(h.home) as other:
            await other.create_thread(thread_id=h.thread_id)
        assert len((await h.service.recorder.view(h.thread_id)).turns) == 0
        await h.service.update_thread(h.thread_id, title="after")
        state = h.state()
        assert state.turns == () and state.settings.title == "after"
    seqs = [e.seq for e in JsonlEventStore(h.home).read(h.thread_id)]
    assert seqs == list(range(1, len(seqs) + 1))
