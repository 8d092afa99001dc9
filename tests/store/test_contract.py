"""The EventStore contract, run against every adapter."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import anyio
import anyio.lowlevel
import pytest

from kun.store import (
    EventStore,
    InvalidSequence,
    InvalidThreadId,
    JsonlEventStore,
    MemoryEventStore,
    ReadReport,
    SeqConflict,
    StoreClosed,
    ThreadLocked,
    ThreadNotFound,
)
from tests.store.factories import TID, delta, every_kind, warning, warnings

pytestmark = pytest.mark.anyio


OpenStore = Callable[[], EventStore]


def _opener(request: pytest.FixtureRequest, tmp_path: Path) -> OpenStore:
    """Opens the adapter ``request.param`` names over the test's storage:
    every store it opens sees the same threads (the memory store's are its
    own)."""
    if request.param == "jsonl":
        return lambda: JsonlEventStore(tmp_path / "home")
    if request.param == "memory":
        return MemoryEventStore
    url: str = request.getfixturevalue("postgres_url")
    from kun.store.postgres import PostgresEventStore  # psycopg: skipped above if missing

    return lambda: PostgresEventStore(url)


@pytest.fixture(params=["jsonl", "memory", "postgres"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[EventStore]:
    async with _opener(request, tmp_path)() as adapter:
        yield adapter


@pytest.fixture(params=["jsonl", "postgres"])
async def two_stores(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[tuple[EventStore, EventStore]]:
    """Two stores over the same storage, as two processes (or machines)
    open it: the adapters whose storage is shared."""
    open_store = _opener(request, tmp_path)
    async with open_store() as first, open_store() as second:
        yield first, second


async def test_round_trip_of_every_kind(store: EventStore) -> None:
    events = every_kind()
    assert await store.append(TID, events[:1], expected_seq=0) == 1
    assert await store.append(TID, events[1:], expected_seq=1) == len(events)
    assert list(store.read(TID)) == events
    assert await store.last_seq(TID) == len(events)


async def test_a_new_thread(store: EventStore) -> None:
    assert await store.last_seq("thr_new") == 0
    assert not store.exists("thr_new")
    assert store.list_threads() == []
    with pytest.raises(ThreadNotFound, match="thr_new"):
        store.read("thr_new")


async def test_claim_creates_the_thread_and_returns_its_last_seq(store: EventStore) -> None:
    assert await store.claim(TID) == 0
    assert store.exists(TID)
    assert list(store.read(TID)) == []
    await store.append(TID, warnings(1, 2), expected_seq=0)
    assert await store.claim(TID) == 2


async def test_release_keeps_what_was_written_and_the_thread_can_be_taken_again(
    store: EventStore,
) -> None:
    await store.release(TID)  # a thread never claimed: nothing to do
    await store.append(TID, warnings(1, 2), expected_seq=0)
    await store.release(TID)
    await store.release(TID)
    assert [e.seq for e in store.read(TID)] == [1, 2]
    assert await store.last_seq(TID) == 2
    assert await store.claim(TID) == 2
    assert await store.append(TID, warnings(3, 3), expected_seq=2) == 3


async def test_a_stale_expected_seq_conflicts_and_writes_nothing(store: EventStore) -> None:
    await store.append(TID, warnings(1, 3), expected_seq=0)
    with pytest.raises(SeqConflict) as caught:
        await store.append(TID, [warning(3)], expected_seq=2)
    assert (caught.value.expected, caught.value.actual) == (2, 3)
    assert "expected last seq 2" in str(caught.value)
    assert "is 3" in str(caught.value)
    assert [e.seq for e in store.read(TID)] == [1, 2, 3]


@pytest.mark.parametrize("batch_seqs", [[2], [1, 3], [1, 1], [0]])
async def test_a_misnumbered_batch_is_rejected_whole(
    store: EventStore, batch_seqs: list[int]
) -> None:
    with pytest.raises(InvalidSequence, match="expected"):
        await store.append(TID, [warning(s) for s in batch_seqs], expected_seq=0)
    assert await store.last_seq(TID) == 0
    await store.append(TID, [warning(1)], expected_seq=0)
    assert [e.seq for e in store.read(TID)] == [1]


async def test_events_of_another_thread_are_rejected(store: EventStore) -> None:
    with pytest.raises(InvalidSequence, match="thr_other"):
        await store.append(TID, [warning(1), warning(2, "thr_other")], expected_seq=0)
    assert await store.last_seq(TID) == 0


async def test_an_empty_batch_only_checks_the_seq(store: EventStore) -> None:
    await store.append(TID, warnings(1, 2), expected_seq=0)
    assert await store.append(TID, [], expected_seq=2) == 2
    with pytest.raises(SeqConflict):
        await store.append(TID, [], expected_seq=1)


async def test_after_and_until(store: EventStore) -> None:
    await store.append(TID, warnings(1, 10), expected_seq=0)
    assert [e.seq for e in store.read(TID, after=4)] == [5, 6, 7, 8, 9, 10]
    assert [e.seq for e in store.read(TID, until=3)] == [1, 2, 3]
    assert [e.seq for e in store.read(TID, after=2, until=5)] == [3, 4, 5]
    assert list(store.read(TID, after=10)) == []


async def test_limit_pages_through_the_log(store: EventStore) -> None:
    await store.append(TID, warnings(1, 10), expected_seq=0)
    pages: list[list[int]] = []
    after = 0
    while page := [e.seq for e in store.read(TID, after=after, limit=4)]:
        pages.append(page)
        after = page[-1]
    assert pages == [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10]]
    assert [e.seq for e in store.read(TID, after=2, until=4, limit=5)] == [3, 4]
    assert [e.seq for e in store.read(TID, after=2, until=9, limit=2)] == [3, 4]
    assert list(store.read(TID, limit=0)) == []
    with pytest.raises(ValueError, match="limit"):
        store.read(TID, limit=-1)


async def test_a_limited_read_reports_only_what_it_handed_out(store: EventStore) -> None:
    await store.append(TID, warnings(1, 10), expected_seq=0)
    report = ReadReport()
    assert len(list(store.read(TID, after=3, limit=2, report=report))) == 2
    assert report.events == 2


async def test_the_report_counts_what_was_read(store: EventStore) -> None:
    await store.append(TID, warnings(1, 5), expected_seq=0)
    report = ReadReport()
    assert len(list(store.read(TID, after=1, mode="tolerant", report=report))) == 4
    assert (report.events, report.last_seq, report.torn_tail) == (4, 5, None)


async def test_list_threads_is_sorted(store: EventStore) -> None:
    for thread_id in ["thr_b", "thr_a", "thr_c"]:
        await store.append(thread_id, [warning(1, thread_id)], expected_seq=0)
    assert store.list_threads() == ["thr_a", "thr_b", "thr_c"]
    assert store.exists("thr_b")


async def test_mixed_durable_and_delta_batches(store: EventStore) -> None:
    await store.append(TID, [delta(1), delta(2)], expected_seq=0)
    await store.append(TID, [delta(3), warning(4)], expected_seq=2)
    await store.sync(TID)
    assert [e.seq for e in store.read(TID)] == [1, 2, 3, 4]


@pytest.mark.parametrize("thread_id", ["../x", "a/b", "", ".hidden", "a..b", "a\x00b"])
async def test_thread_ids_are_validated(store: EventStore, thread_id: str) -> None:
    with pytest.raises(InvalidThreadId):
        await store.append(thread_id, [warning(1, thread_id)], expected_seq=0)
    with pytest.raises(InvalidThreadId):
        store.read(thread_id)
    with pytest.raises(InvalidThreadId):
        await store.last_seq(thread_id)


async def test_concurrent_appenders_retrying_on_conflict_lose_nothing(store: EventStore) -> None:
    per_task = 40

    async def appender(name: str) -> None:
        for n in range(per_task):
            while True:
                last = await store.last_seq(TID)
                await anyio.lowlevel.checkpoint()
                event = warning(last + 1, message=f"{name}-{n}")
                try:
                    await store.append(TID, [event], expected_seq=last)
                    break
                except SeqConflict:
                    continue

    async with anyio.create_task_group() as tg:
        tg.start_soon(appender, "a")
        tg.start_soon(appender, "b")

    events = list(store.read(TID))
    assert [e.seq for e in events] == list(range(1, 2 * per_task + 1))
    messages = [e.message for e in events]  # type: ignore[union-attr]
    for name in "ab":
        mine = [m for m in messages if m.startswith(name)]
        assert mine == [f"{name}-{n}" for n in range(per_task)]


async def test_a_closed_store_refuses_writes_but_still_reads(store: EventStore) -> None:
    await store.append(TID, warnings(1, 2), expected_seq=0)
    await store.aclose()
    await store.aclose()
    with pytest.raises(StoreClosed):
        await store.append(TID, [warning(3)], expected_seq=2)
    with pytest.raises(StoreClosed):
        await store.claim("thr_other")
    assert [e.seq for e in store.read(TID)] == [1, 2]


async def test_a_second_store_is_refused_while_the_first_writes(
    two_stores: tuple[EventStore, EventStore],
) -> None:
    store, other = two_stores
    await store.append(TID, warnings(1, 2), expected_seq=0)
    with pytest.raises(ThreadLocked, match="only one writer per thread"):
        await other.claim(TID)
    with pytest.raises(ThreadLocked):
        await other.append(TID, [warning(3)], expected_seq=2)
    assert await other.last_seq(TID) == 2
    assert [e.seq for e in other.read(TID)] == [1, 2]

    await store.release(TID)
    assert await other.claim(TID) == 2
    assert await other.append(TID, [warning(3)], expected_seq=2) == 3
    with pytest.raises(ThreadLocked):
        await store.claim(TID)
    await other.release(TID)
    with pytest.raises(SeqConflict) as caught:
        await store.append(TID, [warning(3)], expected_seq=2)
    assert (caught.value.expected, caught.value.actual) == (2, 3)
    assert await store.append(TID, [warning(4)], expected_seq=3) == 4
    assert [e.seq for e in other.read(TID)] == [1, 2, 3, 4]


async def test_closing_a_store_lets_another_write(
    two_stores: tuple[EventStore, EventStore],
) -> None:
    store, other = two_stores
    await store.append(TID, warnings(1, 2), expected_seq=0)
    await store.aclose()
    assert await other.append(TID, [warning(3)], expected_seq=2) == 3
    assert other.list_threads() == [TID]
