"""An in-memory event store: the same contract, no files.

For tests and fakes: it passes the same contract suite as the JSONL store,
including thread id validation, so code tested against it behaves the same on
disk. Events are kept as the (frozen) objects appended. ``append`` yields to
the event loop once before it checks ``expected_seq``, as a real store would
around IO, so concurrency bugs in callers show up in tests.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from types import TracebackType
from typing import Self

import anyio

from kun.contracts.events import Event
from kun.store.blobs import MemoryBlobStore
from kun.store.errors import InvalidSequence, SeqConflict, StoreClosed, ThreadNotFound
from kun.store.paths import validate_thread_id
from kun.store.port import ReadMode, ReadReport

__all__ = ["MemoryEventStore"]


class MemoryEventStore:
    """:class:`kun.store.port.EventStore` in a dict of lists."""

    def __init__(self) -> None:
        self._logs: dict[str, list[Event]] = {}
        self._blobs: dict[str, MemoryBlobStore] = {}
        self._closed = False

    async def append(
        self, thread_id: str, events: Sequence[Event], *, expected_seq: int, durable: bool = True
    ) -> int:
        validate_thread_id(thread_id)
        await anyio.lowlevel.checkpoint()
        if self._closed:
            raise StoreClosed()
        log = self._logs.get(thread_id, [])
        last = log[-1].seq if log else 0
        if expected_seq != last:
            raise SeqConflict(thread_id, expected_seq, last)
        for index, event in enumerate(events):
            seq = expected_seq + 1 + index
            if event.thread_id != thread_id:
                raise InvalidSequence(thread_id, index, f"belongs to thread {event.thread_id!r}")
            if event.seq != seq:
                raise InvalidSequence(thread_id, index, f"has seq {event.seq}, expected {seq}")
        self._logs[thread_id] = log
        log.extend(events)
        return expected_seq + len(events)

    async def claim(self, thread_id: str) -> int:
        validate_thread_id(thread_id)
        if self._closed:
            raise StoreClosed()
        log = self._logs.setdefault(thread_id, [])
        return log[-1].seq if log else 0

    async def release(self, thread_id: str) -> None:
        """Nothing to release: one process, no lock."""
        validate_thread_id(thread_id)

    def read(
        self,
        thread_id: str,
        *,
        after: int = 0,
        until: int | None = None,
        limit: int | None = None,
        mode: ReadMode = "strict",
        report: ReadReport | None = None,
    ) -> Iterator[Event]:
        validate_thread_id(thread_id)
        if limit is not None and limit < 0:
            raise ValueError(f"limit must not be negative, got {limit}")
        log = self._logs.get(thread_id)
        if log is None:
            raise ThreadNotFound(thread_id)
        report = ReadReport() if report is None else report
        return _read(log[:], after, until, limit, report)

    async def last_seq(self, thread_id: str) -> int:
        validate_thread_id(thread_id)
        log = self._logs.get(thread_id)
        return log[-1].seq if log else 0

    def exists(self, thread_id: str) -> bool:
        validate_thread_id(thread_id)
        return thread_id in self._logs

    def list_threads(self) -> list[str]:
        return sorted(self._logs)

    async def sync(self, thread_id: str) -> None:
        validate_thread_id(thread_id)

    def blobs(self, thread_id: str) -> MemoryBlobStore:
        validate_thread_id(thread_id)
        store = self._blobs.get(thread_id)
        if store is None:
            store = self._blobs[thread_id] = MemoryBlobStore(thread_id)
        return store

    async def aclose(self) -> None:
        self._closed = True

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


def _read(
    log: list[Event], after: int, until: int | None, limit: int | None, report: ReadReport
) -> Iterator[Event]:
    left = -1 if limit is None else limit
    if left == 0:
        return
    for event in log:
        report.lines += 1
        report.last_seq = event.seq
        if event.seq <= after:
            continue
        if until is not None and event.seq > until:
            return
        report.events += 1
        yield event
        left -= 1
        if left == 0:
            return
