"""The event recorder: numbering, validation, persist-then-publish, recovery.

Every test runs against the in-memory store and the JSONL store on disk.
"""

from __future__ import annotations

import errno
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest

from kun.contracts import events as ev
from kun.contracts.items import UserMessage
from kun.domain.errors import ProjectionError
from kun.domain.reduce import replay
from kun.runtime.bus import EventBus
from kun.runtime.recorder import EventRecorder, RecorderNotRunning, ThreadExists, ThreadNotOpen
from kun.store import jsonl as jsonl_module
from kun.store.codec import encode_line
from kun.store.errors import LogWriteFailed, ThreadNotFound
from kun.store.jsonl import JsonlEventStore
from kun.store.memory import MemoryEventStore
from kun.store.paths import log_path
from kun.store.port import EventStore

pytestmark = pytest.mark.anyio

TID = "thr_rec"


class Clock:
    """A fake clock: ``now`` ms, moved by hand."""

    def __init__(self, now: int = 1_700_000_000_000) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def draft(cls: type[Any], turn_id: str | None = None, **fields: Any) -> Any:
    return cls(seq=0, at=0, thread_id="", turn_id=turn_id, **fields)


def created() -> ev.ThreadCreated:
    return draft(ev.ThreadCreated)  # type: ignore[no-any-return]


def turn(turn_id: str = "turn_1") -> list[ev.Event]:
    message = UserMessage(id=f"msg_{turn_id}", text="hello")
    return [draft(ev.TurnStarted, turn_id), draft(ev.ItemCompleted, turn_id, item=message)]


def warning(message: str = "w") -> ev.WarningEvent:
    return draft(ev.WarningEvent, code="test", message=message)  # type: ignore[no-any-return]


def orphan_item() -> ev.ItemCompleted:
    """Invalid: an item for a turn that never started."""
    return draft(ev.ItemCompleted, "turn_nope", item=UserMessage(id="m", text="x"))  # type: ignore[no-any-return]


@pytest.fixture(params=["memory", "jsonl"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[EventStore]:
    made: EventStore = (
        MemoryEventStore() if request.param == "memory" else JsonlEventStore(tmp_path)
    )
    async with made:
        yield made


def logged(store: EventStore, thread_id: str = TID) -> list[ev.Event]:
    return list(store.read(thread_id))


# -- numbering -----------------------------------------------------------------


async def test_events_are_numbered_stamped_and_returned_as_written(store: EventStore) -> None:
    clock = Clock()
    async with EventRecorder(store, clock=clock) as recorder:
        first = await recorder.record(TID, created())
        clock.now += 5
        second = await recorder.record(TID, *turn())
    assert [(e.seq, e.at, e.thread_id) for e in first + second] == [
        (1, clock.now - 5, TID),
        (2, clock.now, TID),
        (3, clock.now, TID),
    ]
    assert logged(store) == first + second
    assert recorder.state(TID).last_seq == 3
    assert recorder.state(TID).turns[0].status == "running"


async def test_a_draft_is_never_changed_so_it_can_be_recorded_again(store: EventStore) -> None:
    again = warning("again")
    async with EventRecorder(store) as recorder:
        await recorder.record(TID, created())
        first = await recorder.record(TID, again, again)
        second = await recorder.record(TID, again)
    assert [e.seq for e in first + second] == [2, 3, 4]
    assert (again.seq, again.at, again.thread_id) == (0, 0, "")
    assert logged(store)[1:] == first + second


async def test_a_thread_starts_with_thread_created_or_is_opened(store: EventStore) -> None:
    async with EventRecorder(store) as recorder:
        with pytest.raises(ThreadNotOpen):
            await recorder.record(TID, warning())
        with pytest.raises(ThreadNotOpen):
            recorder.state(TID)
        assert not recorder.is_open(TID)
        await recorder.record(TID, created())
        assert recorder.is_open(TID)
    async with EventRecorder(MemoryEventStore()) as other:
        with pytest.raises(ThreadNotFound):
            await other.open(TID)
    assert not store.exists("thr_never")


async def test_thread_created_for_an_existing_thread_is_refused(tmp_path: Path) -> None:
    async with JsonlEventStore(tmp_path) as store:
        async with EventRecorder(store) as recorder:
            await recorder.record(TID, created())
    async with JsonlEventStore(tmp_path) as store, EventRecorder(store) as recorder:
        with pytest.raises(ThreadExists):
            await recorder.record(TID, created())
        assert not recorder.is_open(TID)


async def test_record_outside_the_context_is_refused(store: EventStore) -> None:
    recorder = EventRecorder(store)
    with pytest.raises(RecorderNotRunning):
        await recorder.record(TID, created())


# -- validation ----------------------------------------------------------------


@pytest.mark.parametrize("bad_at", [0, 1, 2])
async def test_a_bad_batch_is_rejected_whole(store: EventStore, bad_at: int) -> None:
    async with EventRecorder(store) as recorder:
        await recorder.record(TID, created(), *turn())
        before = recorder.state(TID)
        batch: list[ev.Event] = [warning("a"), warning("b"), warning("c")]
        batch[bad_at] = orphan_item()
        with pytest.raises(ProjectionError):
            await recorder.record(TID, *batch)
        assert recorder.state(TID) == before
        assert len(logged(store)) == 3
        (event,) = await recorder.record(TID, warning())
    assert event.seq == 4
    assert recorder.state(TID) == replay(logged(store))


async def test_a_rejected_first_batch_leaves_no_thread(store: EventStore) -> None:
    async with EventRecorder(store) as recorder:
        with pytest.raises(ProjectionError):
            await recorder.record(TID, created(), orphan_item())
        assert not recorder.is_open(TID)
        assert await store.last_seq(TID) == 0
        await recorder.record(TID, created())
        assert recorder.state(TID).last_seq == 1


# -- persist, then publish ----------------------------------------------------


async def test_a_follower_never_sees_an_event_the_store_does_not_have(
    store: EventStore,
) -> None:
    seen: list[int] = []

    async def follow(recorder: EventRecorder) -> None:
        async for event in recorder.subscribe(TID):
            stored = list(store.read(TID, after=event.seq - 1, until=event.seq))
            assert stored == [event]
            seen.append(event.seq)
            if event.seq == 40:
                return

    async with EventRecorder(store) as recorder, anyio.create_task_group() as tg:
        tg.start_soon(follow, recorder)
        await anyio.wait_all_tasks_blocked()
        await recorder.record(TID, created(), *turn())
        for i in range(37):
            await recorder.record(TID, warning(str(i)))
    assert seen == list(range(1, 41))


# -- failures of the store ----------------------------------------------------


class FailingStore(MemoryEventStore):
    """A memory store whose next append writes ``keep`` events of the batch
    (a torn batch) and then fails, as a full disk would."""

    def __init__(self) -> None:
        super().__init__()
        self.fail_next: int | None = None

    async def append(self, thread_id: str, events: Sequence[ev.Event], *, expected_seq: int) -> int:
        keep, self.fail_next = self.fail_next, None
        if keep is None:
            return await super().append(thread_id, events, expected_seq=expected_seq)
        if keep:
            await super().append(thread_id, events[:keep], expected_seq=expected_seq)
        raise LogWriteFailed(Path("/fake/events.jsonl"), "no space left on device")


@pytest.mark.parametrize("keep", [0, 1, 2])
async def test_a_failed_append_leaves_the_projection_equal_to_the_log(keep: int) -> None:
    store = FailingStore()
    published: list[ev.Event] = []

    class Spy(EventBus):
        def publish(self, event: ev.Event) -> None:
            published.append(event)
            super().publish(event)

    async with EventRecorder(store) as recorder:
        await recorder.record(TID, created(), *turn())
        recorder.bus = Spy()
        store.fail_next = keep
        with pytest.raises(LogWriteFailed):
            await recorder.record(TID, warning("a"), warning("b"), warning("c"))
        assert recorder.state(TID) == replay(store.read(TID))
        assert recorder.state(TID).last_seq == 3 + keep
        assert published == []
        (event,) = await recorder.record(TID, warning("after"))
    assert event.seq == 4 + keep
    assert recorder.state(TID) == replay(store.read(TID))


async def test_a_failed_first_append_leaves_no_thread() -> None:
    store = FailingStore()
    store.fail_next = 0
    async with EventRecorder(store) as recorder:
        with pytest.raises(LogWriteFailed):
            await recorder.record(TID, created())
        assert not recorder.is_open(TID)
        await recorder.record(TID, created())
        assert recorder.state(TID).last_seq == 1


async def test_a_failed_fsync_on_disk_is_survived(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing(fd: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    async with JsonlEventStore(tmp_path) as store, EventRecorder(store) as recorder:
        await recorder.record(TID, created(), *turn())
        monkeypatch.setattr(jsonl_module, "_fsync", failing)
        with pytest.raises(LogWriteFailed):
            await recorder.record(TID, warning("written, not synced"))
        monkeypatch.undo()
        assert recorder.state(TID) == replay(logged(store))
        (event,) = await recorder.record(TID, warning("after"))
        assert event.seq == recorder.state(TID).last_seq == len(logged(store))


async def test_a_cancelled_record_leaves_the_projection_equal_to_the_log(
    store: EventStore,
) -> None:
    async with EventRecorder(store) as recorder:
        await recorder.record(TID, created(), *turn())
        with anyio.CancelScope() as scope:
            scope.cancel()
            await recorder.record(TID, warning("cancelled"))
        assert recorder.state(TID) == replay(logged(store))
        (event,) = await recorder.record(TID, warning("after"))
        assert event.seq == len(logged(store))


# -- open ----------------------------------------------------------------------


async def test_open_replays_the_log_and_continues_it(store: EventStore) -> None:
    async with EventRecorder(store) as recorder:
        await recorder.record(TID, created(), *turn())
    async with EventRecorder(store) as again:
        state = await again.open(TID)
        assert state == replay(logged(store))
        assert await again.open(TID) == state
        (event,) = await again.record(TID, warning())
    assert event.seq == 4


async def test_open_repairs_a_torn_tail(tmp_path: Path) -> None:
    async with JsonlEventStore(tmp_path) as store, EventRecorder(store) as recorder:
        await recorder.record(TID, created(), *turn())
    torn = encode_line(ev.WarningEvent(seq=4, at=1, thread_id=TID, code="c", message="m"))
    with log_path(tmp_path, TID).open("ab") as log:
        log.write(torn[:-7])
    async with JsonlEventStore(tmp_path) as store, EventRecorder(store) as recorder:
        state = await recorder.open(TID)
        assert state.last_seq == 4
        (repair,) = state.repairs
        assert (repair.seq, repair.line, repair.dropped_bytes) == (4, 4, len(torn) - 7)
        (event,) = await recorder.record(TID, warning())
        assert event.seq == 5
        assert [type(e) for e in logged(store)][-2:] == [ev.LogRepaired, ev.WarningEvent]
