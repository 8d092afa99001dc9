"""The bus: backlog then live, keyed by seq, with no gap and no duplicate."""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kun.contracts import events as ev
from kun.runtime.bus import EventBus, Follower, FollowerGap
from kun.runtime.recorder import EventRecorder
from kun.store.jsonl import JsonlEventStore
from kun.store.memory import MemoryEventStore
from kun.store.port import EventStore

pytestmark = pytest.mark.anyio

TID = "thr_bus"


def event(seq: int, thread_id: str = TID) -> ev.WarningEvent:
    return ev.WarningEvent(seq=seq, at=seq, thread_id=thread_id, code="c", message=str(seq))


class Log:
    """A writer that persists, then publishes. ``backlog`` streams the log
    live (it sees what is appended while it runs) or from a snapshot (it
    does not): the store contract allows both."""

    def __init__(self, bus: EventBus, *, snapshot: bool = False) -> None:
        self.bus = bus
        self.events: list[ev.Event] = []
        self.snapshot = snapshot
        self.during_read: Callable[[int], None] = lambda seq: None

    def write(self, count: int = 1) -> None:
        for _ in range(count):
            written = event(len(self.events) + 1)
            self.events.append(written)
            self.bus.publish(written)

    def backlog(self, after: int) -> Iterator[ev.Event]:
        source = list(self.events) if self.snapshot else self.events
        i = 0
        while i < len(source):
            current = source[i]
            i += 1
            if current.seq > after:
                self.during_read(current.seq)
                yield current

    def follow(self, after: int = 0) -> Follower:
        return self.bus.follow(TID, after=after, backlog=self.backlog)


async def take(follower: Follower, count: int) -> list[int]:
    with anyio.fail_after(5):
        return [(await follower.__anext__()).seq for _ in range(count)]


async def test_backlog_then_live() -> None:
    log = Log(EventBus())
    log.write(3)
    follower = log.follow()
    assert await take(follower, 3) == [1, 2, 3]
    log.write(2)
    assert await take(follower, 2) == [4, 5]
    await follower.aclose()


@pytest.mark.parametrize("snapshot", [False, True], ids=["live read", "snapshot read"])
async def test_events_written_while_the_backlog_is_read_have_no_gap_or_duplicate(
    snapshot: bool,
) -> None:
    log = Log(EventBus(), snapshot=snapshot)
    log.write(10)

    def write_while_reading(seq: int) -> None:
        if len(log.events) < 60:
            log.write(2)

    log.during_read = write_while_reading
    follower = log.follow()
    seen: list[int] = []
    while len(seen) < len(log.events):
        seen += await take(follower, 1)
    log.during_read = lambda seq: None
    log.write()
    seen += await take(follower, 1)
    assert len(seen) > 20
    assert seen == list(range(1, len(log.events) + 1))


async def test_after_resumes_exactly() -> None:
    log = Log(EventBus())
    log.write(10)
    assert await take(log.follow(after=7), 3) == [8, 9, 10]
    resumed = log.follow(after=10)
    log.write()
    assert await take(resumed, 1) == [11]


async def test_a_slow_follower_rereads_the_log_instead_of_losing_events() -> None:
    log = Log(EventBus(buffer=4), snapshot=True)
    log.write(2)
    follower = log.follow()
    assert await take(follower, 2) == [1, 2]
    log.write()
    assert await take(follower, 1) == [3]
    log.write(100)
    assert await take(follower, 100) == list(range(4, 104))
    assert follower.rereads == 1
    log.write()
    assert await take(follower, 1) == [104]


async def test_two_followers_each_get_everything() -> None:
    log = Log(EventBus(buffer=8))
    first, second = log.follow(), log.follow(after=2)
    log.write(5)
    assert await take(first, 2) == [1, 2]
    log.write(20)
    assert await take(second, 23) == list(range(3, 26))
    assert await take(first, 23) == list(range(3, 26))


async def test_a_follower_waits_for_live_events() -> None:
    log = Log(EventBus())
    follower = log.follow()
    got: list[int] = []

    async def consume() -> None:
        got.extend(await take(follower, 2))

    async with anyio.create_task_group() as tg:
        tg.start_soon(consume)
        await anyio.wait_all_tasks_blocked()
        assert got == []
        log.write(2)
    assert got == [1, 2]


async def test_an_event_missing_from_the_log_is_an_error_not_a_skip() -> None:
    bus = EventBus()
    log = Log(bus)
    log.write(1)
    follower = log.follow()
    assert await take(follower, 1) == [1]
    bus.publish(event(3))
    with pytest.raises(FollowerGap) as caught:
        await take(follower, 1)
    assert (caught.value.last, caught.value.seq) == (1, 3)


async def test_a_follower_that_stops_leaves_the_bus() -> None:
    bus = EventBus()
    log = Log(bus)
    closed, dropped = log.follow(), log.follow()
    await take(closed, 0)
    log.write()
    assert await take(closed, 1) == [1]
    assert await take(dropped, 1) == [1]
    assert bus.followers(TID) == 2
    await closed.aclose()
    assert bus.followers(TID) == 1
    with pytest.raises(StopAsyncIteration):
        await closed.__anext__()
    del dropped
    gc.collect()
    assert bus.followers(TID) == 0
    log.write()


async def test_aclose_ends_a_waiting_follower() -> None:
    log = Log(EventBus())
    follower = log.follow()
    ended = False

    async def consume() -> None:
        nonlocal ended
        async for _ in follower:
            pass
        ended = True

    async with anyio.create_task_group() as tg:
        tg.start_soon(consume)
        await anyio.wait_all_tasks_blocked()
        await follower.aclose()
    assert ended


# -- through the recorder, with real stores -----------------------------------


@pytest.fixture(params=["memory", "jsonl"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[EventStore]:
    made: EventStore = (
        MemoryEventStore() if request.param == "memory" else JsonlEventStore(tmp_path)
    )
    async with made:
        yield made


def draft(cls: type[Any], **fields: Any) -> Any:
    return cls(seq=0, at=0, thread_id="", **fields)


async def test_a_slow_follower_of_a_busy_writer_sees_every_event_once(store: EventStore) -> None:
    total = 300
    seen: list[int] = []

    async def follow(recorder: EventRecorder, after: int) -> None:
        async for got in recorder.subscribe(TID, after=after):
            seen.append(got.seq)
            if len(seen) % 7 == 0:
                await anyio.sleep(0.001)
            if got.seq == total:
                return

    async with EventRecorder(store) as recorder:
        recorder.bus = EventBus(buffer=8)
        await recorder.record(TID, draft(ev.ThreadCreated))
        for _ in range(20):
            await recorder.record(TID, draft(ev.WarningEvent, code="c", message="backlog"))
        async with anyio.create_task_group() as tg:
            tg.start_soon(follow, recorder, 5)
            for _ in range(total - 21):
                await recorder.record(TID, draft(ev.WarningEvent, code="c", message="live"))
                await anyio.lowlevel.checkpoint()
    assert seen == list(range(6, total + 1))


async def test_a_follower_of_a_thread_with_no_log_yet_starts_empty(store: EventStore) -> None:
    async with EventRecorder(store) as recorder:
        follower = recorder.subscribe(TID)
        async with anyio.create_task_group() as tg:

            async def first() -> None:
                got = await follower.__anext__()
                assert (got.seq, type(got)) == (1, ev.ThreadCreated)

            tg.start_soon(first)
            await anyio.wait_all_tasks_blocked()
            await recorder.record(TID, draft(ev.ThreadCreated))
        await follower.aclose()


async def test_a_batch_is_what_is_ready_up_to_most_then_empty_once_closed() -> None:
    log = Log(EventBus())
    log.write(5)
    follower = log.follow()
    with anyio.fail_after(5):
        assert [e.seq for e in await follower.batch(3)] == [1, 2, 3]
        assert [e.seq for e in await follower.batch(10)] == [4, 5]
        log.write(2)
        assert [e.seq for e in await follower.batch(10)] == [6, 7]
        assert follower.last == 7
        await follower.aclose()
        assert await follower.batch(10) == []


@settings(max_examples=60, deadline=None)
@given(
    steps=st.lists(st.tuples(st.integers(0, 12), st.integers(1, 9)), min_size=1, max_size=25),
    buffer=st.integers(1, 6),
)
def test_batches_and_iteration_interleaved_give_every_event_once_in_order(
    steps: list[tuple[int, int]], buffer: int
) -> None:
    """Whatever mix of writes, batches and single steps, with a buffer that
    overflows: the seqs served are 1..N, each once, in order."""

    async def run() -> None:
        log = Log(EventBus(buffer=buffer), snapshot=True)
        follower = log.follow()
        served: list[int] = []
        with anyio.fail_after(5):
            for writes, most in steps:
                log.write(writes)
                while follower.last < len(log.events):
                    if most % 2:
                        served.extend(e.seq for e in await follower.batch(most))
                    else:
                        served.append((await follower.__anext__()).seq)
        await follower.aclose()
        assert served == list(range(1, len(log.events) + 1))

    anyio.run(run)
