"""Runs as a queue on one node (:mod:`kun.runtime.queue`): turns sent while
one runs wait as ``turn_queued`` and start in order, one at a time."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from kun.contracts import events as ev
from kun.contracts.items import UserMessage
from kun.contracts.model import CompletedChunk, ModelRequest, ModelStreamChunk, TextDeltaChunk
from kun.domain.reduce import replay
from kun.model.scripted import ScriptedModelClient
from kun.runtime.errors import QueuedTurnsWaiting, QueueFull, ThreadBusy
from kun.runtime.orphans import orphan_events
from kun.runtime.reconcile import reconcile_orphaned_turns
from kun.runtime.recorder import EventRecorder
from kun.runtime.service import TurnService
from kun.store.jsonl import JsonlEventStore
from kun.testing.logbuilder import LogBuilder
from kun.tools.host import default_host as builtin_host
from tests.runtime.support import Harness, harness

pytestmark = pytest.mark.anyio


class Gated:
    """A model answering every request with its last user message; a
    message starting ``block`` waits for ``gate`` first."""

    def __init__(self) -> None:
        self.gate = anyio.Event()
        self.blocked = anyio.Event()
        self.seen: list[list[str]] = []

    def __call__(self, request: ModelRequest) -> AsyncIterator[ModelStreamChunk]:
        return self._reply(request)

    async def _reply(self, request: ModelRequest) -> AsyncIterator[ModelStreamChunk]:
        said = [i.text for i in request.history if isinstance(i, UserMessage)]
        self.seen.append(said)
        if said[-1].startswith("block"):
            self.blocked.set()
            await self.gate.wait()
        yield TextDeltaChunk(text=f"done: {said[-1]}")
        yield CompletedChunk(stop_reason="stop")


async def _in_turn(service: TurnService, thread_id: str) -> None:
    """Wait for the thread's turns one after the other: a settled turn
    starts the next queued one before its waiters wake, so this ends once
    the queue is empty."""
    with anyio.fail_after(10):
        for turn in service.state(thread_id).turns:
            await service.wait_turn(thread_id, turn.turn_id)
    assert service.running_turn(thread_id) is None


async def _settled(h: Harness, count: int) -> None:
    await _in_turn(h.service, h.thread_id)
    assert sum(t.settled for t in h.state().turns) == count


async def test_turns_sent_while_one_runs_wait_and_run_in_order(tmp_path: Path) -> None:
    model = Gated()
    async with harness(tmp_path, model) as h:
        first, queued = await h.service.enqueue_turn(h.thread_id, "block first")
        assert not queued
        await model.blocked.wait()
        waiting = [await h.service.enqueue_turn(h.thread_id, f"then {n}") for n in range(3)]
        assert all(queued for _, queued in waiting)
        ids = [turn_id for turn_id, _ in waiting]
        state = h.state()
        assert state.queued_turns == tuple(ids)
        assert state.running_turn is not None and state.running_turn.turn_id == first
        assert model.seen == [["block first"]]
        model.gate.set()
        await _settled(h, 4)
        turns = h.state().turns
        assert [t.turn_id for t in turns] == [first, *ids]
        assert {t.status for t in turns} == {"completed"}
        assert [t.started_seq for t in turns] == sorted(t.started_seq for t in turns)
        # Each ran alone, after the one before it settled, told only the past.
        assert model.seen[1:] == [
            ["block first", "then 0"],
            ["block first", "then 0", "then 1"],
            ["block first", "then 0", "then 1", "then 2"],
        ]
    on_disk = list(JsonlEventStore(h.home).read(h.thread_id))
    assert replay(on_disk).turns == h.state().turns
    kinds = [(type(e).__name__, e.turn_id) for e in on_disk if e.turn_id == ids[0]]
    assert kinds[:2] == [("TurnQueued", ids[0]), ("TurnStarted", ids[0])]
    messages = [e for e in on_disk if isinstance(e, ev.ItemCompleted) and e.turn_id == ids[0]]
    assert not any(isinstance(e.item, UserMessage) for e in messages), "message written twice"


async def test_a_queued_turn_interrupted_settles_without_running(tmp_path: Path) -> None:
    model = Gated()
    async with harness(tmp_path, model) as h:
        await h.service.enqueue_turn(h.thread_id, "block first")
        await model.blocked.wait()
        dropped, _ = await h.service.enqueue_turn(h.thread_id, "never")
        kept, _ = await h.service.enqueue_turn(h.thread_id, "kept")
        await h.service.interrupt_turn(h.thread_id, dropped)
        turn = h.turn(dropped)
        assert (turn.status, turn.abort_reason) == ("aborted", "cancelled")
        assert h.state().queued_turns == (kept,)
        model.gate.set()
        await _settled(h, 3)
        assert h.turn(kept).status == "completed"
        assert all("never" not in said for said in model.seen)


async def test_interrupting_the_running_turn_starts_the_next_after_its_abort(
    tmp_path: Path,
) -> None:
    model = Gated()
    async with harness(tmp_path, model) as h:
        first, _ = await h.service.enqueue_turn(h.thread_id, "block first")
        await model.blocked.wait()
        nxt, _ = await h.service.enqueue_turn(h.thread_id, "next")
        await h.service.interrupt_turn(h.thread_id, first)
        await _settled(h, 2)
        assert (h.turn(first).status, h.turn(nxt).status) == ("aborted", "completed")
    events = list(JsonlEventStore(h.home).read(h.thread_id))
    aborted = next(e.seq for e in events if isinstance(e, ev.TurnAborted))
    started = next(e.seq for e in events if isinstance(e, ev.TurnStarted) and e.turn_id == nxt)
    assert aborted < started


async def test_two_turns_sent_at_once_to_an_idle_thread_run_one_and_queue_one(
    tmp_path: Path,
) -> None:
    model = Gated()
    async with harness(tmp_path, model) as h:
        answers: list[tuple[str, bool]] = []

        async def send(text: str) -> None:
            answers.append(await h.service.enqueue_turn(h.thread_id, text))

        async with anyio.create_task_group() as tg:
            tg.start_soon(send, "block a")
            tg.start_soon(send, "block b")
        assert sorted(queued for _, queued in answers) == [False, True]
        state = h.state()
        assert [t.status for t in state.turns] == ["running", "queued"]
        model.gate.set()
        await _settled(h, 2)


async def test_reject_refuses_while_turns_wait_and_the_queue_has_a_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("kun.runtime.queue.MAX_QUEUED", 2)
    model = Gated()
    async with harness(tmp_path, model) as h:
        await h.service.enqueue_turn(h.thread_id, "block first")
        await model.blocked.wait()
        with pytest.raises(ThreadBusy):
            await h.service.start_turn(h.thread_id, "refused")
        await h.service.enqueue_turn(h.thread_id, "one")
        await h.service.enqueue_turn(h.thread_id, "two")
        with pytest.raises(QueueFull, match="2 queued turns"):
            await h.service.enqueue_turn(h.thread_id, "three")
        model.gate.set()
        await _settled(h, 3)
        assert len(h.state().turns) == 3


async def _left_by_a_dead_process(home: Path) -> tuple[str, str, str]:
    """A log whose writer died while its turn ran with two turns queued."""
    b = LogBuilder("thr_leftover")
    b.create(workspace=str(home.parent), title="left over")
    running = b.start_turn("block gone", model="scripted")
    queued = []
    for text in ("left 1", "left 2"):
        turn_id = b.next_id("turn")
        b.emit(ev.TurnQueued, turn_id=turn_id, message=UserMessage(id=b.next_id("m"), text=text))
        queued.append(turn_id)
    async with JsonlEventStore(home) as store:
        await store.append("thr_leftover", b.events, expected_seq=0)
    return running, queued[0], queued[1]


async def test_a_queue_left_by_a_dead_process_starts_on_reconcile(tmp_path: Path) -> None:
    home = tmp_path / "home"
    running, _first, _second = await _left_by_a_dead_process(home)
    model = Gated()
    store = JsonlEventStore(home)
    async with store, EventRecorder(store) as recorder, anyio.create_task_group() as tg:
        service = TurnService(recorder, tg, model=ScriptedModelClient(model), tools=builtin_host())
        with pytest.raises(QueuedTurnsWaiting):
            await service.rewind_thread("thr_leftover", running)
        assert await reconcile_orphaned_turns(service) == ["thr_leftover"]
        await _in_turn(service, "thr_leftover")
        state = service.state("thr_leftover")
        assert [t.status for t in state.turns] == ["failed", "completed", "completed"]
        assert state.turns[0].error is not None and state.turns[0].error.code == "orphaned"
        assert [said[-1] for said in model.seen] == ["left 1", "left 2"]
        tg.cancel_scope.cancel()


async def test_a_new_turn_on_a_thread_with_a_leftover_queue_waits_behind_it(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    await _left_by_a_dead_process(home)
    model = Gated()
    store = JsonlEventStore(home)
    async with store, EventRecorder(store) as recorder, anyio.create_task_group() as tg:
        service = TurnService(recorder, tg, model=ScriptedModelClient(model), tools=builtin_host())
        _latest, queued = await service.enqueue_turn("thr_leftover", "latest")
        assert queued
        await _in_turn(service, "thr_leftover")
        assert [said[-1] for said in model.seen] == ["left 1", "left 2", "latest"]
        tg.cancel_scope.cancel()


async def test_a_queued_turn_that_came_with_an_import_is_settled_not_started() -> None:
    b = LogBuilder("thr_moved")
    b.create(workspace="/w", title="moved")
    b.start_turn("running there")
    queued = b.next_id("turn")
    b.emit(ev.TurnQueued, turn_id=queued, message=UserMessage(id=b.next_id("m"), text="there"))
    here = replay(b.events)
    assert [e.turn_id for e in orphan_events(here, set()) if isinstance(e, ev.TurnFailed)] == [
        here.turns[0].turn_id
    ]
    b.emit(ev.ThreadImported)
    moved = replay(b.events)
    failed = [e.turn_id for e in orphan_events(moved, set()) if isinstance(e, ev.TurnFailed)]
    assert failed == [moved.turns[0].turn_id, queued]
