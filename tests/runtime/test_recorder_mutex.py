"""The recorder's per-thread mutex: exclusion under contention, and a waiter
cancelled while it waits leaves the mutex usable."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from kun.contracts import events as ev
from kun.runtime.recorder import EventRecorder, _Mutex
from kun.store.memory import MemoryEventStore

pytestmark = pytest.mark.anyio

TID = "thr_mutex"


async def test_contended_holders_never_overlap() -> None:
    mutex = _Mutex()
    inside = 0
    most = 0
    order: list[int] = []

    async def hold(i: int) -> None:
        nonlocal inside, most
        async with mutex:
            inside += 1
            most = max(most, inside)
            await anyio.sleep(0.001)
            order.append(i)
            inside -= 1

    async with anyio.create_task_group() as tg:
        for i in range(8):
            tg.start_soon(hold, i)
    assert most == 1
    assert sorted(order) == list(range(8))
    assert not mutex.locked()


async def test_cancelled_waiter_leaves_it_free() -> None:
    mutex = _Mutex()
    entered = anyio.Event()
    release = anyio.Event()

    async def holder() -> None:
        async with mutex:
            entered.set()
            await release.wait()

    async def waiter(scope_out: list[anyio.CancelScope]) -> None:
        with anyio.CancelScope() as scope:
            scope_out.append(scope)
            async with mutex:
                raise AssertionError("a cancelled waiter must not get in")

    scopes: list[anyio.CancelScope] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(holder)
        await entered.wait()
        tg.start_soon(waiter, scopes)
        await anyio.sleep(0.01)
        assert mutex.locked()
        scopes[0].cancel()
        await anyio.sleep(0.01)
        release.set()
    assert not mutex.locked()
    with anyio.fail_after(1):
        async with mutex:
            assert mutex.locked()


class _SlowStore(MemoryEventStore):
    """An append that awaits, so concurrent writers of one thread contend."""

    async def append(self, thread_id: str, events: Any, *, expected_seq: int, **kw: Any) -> int:
        await anyio.sleep(0.001)
        return await super().append(thread_id, events, expected_seq=expected_seq, **kw)


def _warning(i: int) -> ev.WarningEvent:
    return ev.WarningEvent(seq=0, at=0, thread_id="", code="test", message=str(i))


async def test_contended_records_are_numbered_in_turn() -> None:
    """``record`` takes the mutex inline (no ``async with``): writers that
    meet it busy wait, and each batch gets the seqs after the last one."""
    store = _SlowStore()
    async with store, EventRecorder(store) as recorder:
        await recorder.record(TID, ev.ThreadCreated(seq=0, at=0, thread_id=""))

        async def write(i: int) -> None:
            for j in range(5):
                await recorder.record(TID, _warning(i * 10 + j), _warning(i * 10 + j))

        async with anyio.create_task_group() as tg:
            for i in range(6):
                tg.start_soon(write, i)
        logged = list(store.read(TID))
        assert [e.seq for e in logged] == list(range(1, 62))
        assert recorder.state(TID).last_seq == 61
        messages = [e.message for e in logged[1:] if isinstance(e, ev.WarningEvent)]
        assert messages[0::2] == messages[1::2]


async def test_a_record_cancelled_while_waiting_leaves_the_thread_writable() -> None:
    store = _SlowStore()
    async with store, EventRecorder(store) as recorder:
        await recorder.record(TID, ev.ThreadCreated(seq=0, at=0, thread_id=""))
        async with anyio.create_task_group() as tg:
            tg.start_soon(recorder.record, TID, _warning(1))
            await anyio.sleep(0.0001)
            with anyio.CancelScope() as scope:
                scope.cancel()
                await recorder.record(TID, _warning(2))
            # Still held by the first writer: this one must wait its turn.
            (written,) = await recorder.record(TID, _warning(3))
    assert written.seq == 3
    assert [e.message for e in store.read(TID) if isinstance(e, ev.WarningEvent)] == ["1", "3"]
