"""The storage port: one append-only log of events per thread.

Every backend (the JSONL files of :mod:`kun.store.jsonl`, the in-memory fake of
:mod:`kun.store.memory`, a database later) honours the contract written on
:class:`EventStore`, and one contract test suite runs against each of them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Literal, Protocol, Self, runtime_checkable

import msgspec

from kun.contracts.events import Event

if TYPE_CHECKING:
    from kun.store.blobs import BlobStore
    from kun.store.pg_changes import ChangeFeed
    from kun.store.pg_cluster import PostgresCluster
    from kun.store.pg_control import PostgresControl

__all__ = ["ChangeSource", "EventStore", "ReadMode", "ReadReport", "SharedStore", "TornTail"]

ReadMode = Literal["strict", "tolerant", "skip_bad"]
"""How a reader treats lines it cannot turn into events.

``strict``: an unknown kind (or a known kind at a newer version) raises
``UnknownEventKind``; a bad line, a gap in the seqs or a seq that is not after
the previous one raises ``CorruptLog``. The runtime's mode when it must trust
what it rebuilds.
``tolerant``: unknown kinds (a log from a newer kun) are skipped and counted,
and so are gaps in the seqs; bad lines and repeated seqs still raise. Replay
for display.
``skip_bad``: unknown kinds, bad lines and lines whose seq is not after the
previous one are skipped and counted, gaps counted. For tools such as
transcript-diff and ``kun usage`` that must say how much they could not read.

A bad line is anything but exactly one event on one line: two events on a
line, an event over two lines, a line nested too deeply to decode.

In every mode a torn *last* line (no trailing newline, or not JSON) is not an
error: it is what a crash mid-append leaves, and it is reported in
:attr:`ReadReport.torn_tail`. A last line that holds a complete event and more
is not torn (see :mod:`kun.store.torn`): it is a bad line.
"""


class TornTail(msgspec.Struct, frozen=True, kw_only=True):
    """The torn last line of a log: what a crash in the middle of an append
    leaves. ``line`` is 1-based, ``offset`` the byte where it starts,
    ``size`` its length in bytes (newline included, if it had one)."""

    line: int
    offset: int
    size: int
    reason: str
    preview: str


class ReadReport(msgspec.Struct, kw_only=True):
    """What a read met, filled in as the read goes; pass one in to see it.

    ``lines`` counts non-blank lines read (a log kun wrote holds one event per
    line); ``events`` the events handed to the caller; ``unknown_kinds`` the
    lines skipped per unknown kind; ``skipped_bad`` the bad lines skipped in
    ``skip_bad`` mode; ``last_seq`` the seq of the last event decoded.
    ``seq_gaps`` counts the places where seqs jump ahead and ``missing_seqs``
    the seqs missing there (``first_gap`` is the first one, as the seqs on
    either side), when a mode reads past them; a gap that skipped bad lines
    fill is not counted. ``repeated_seqs`` counts the lines ``skip_bad``
    skipped because their seq was not after the previous one.
    Counts add up if one report is passed to several reads.
    """

    lines: int = 0
    events: int = 0
    unknown_kinds: dict[str, int] = msgspec.field(default_factory=dict)
    skipped_bad: int = 0
    last_seq: int = 0
    torn_tail: TornTail | None = None
    seq_gaps: int = 0
    missing_seqs: int = 0
    first_gap: tuple[int, int] | None = None
    repeated_seqs: int = 0

    @property
    def unknown(self) -> int:
        """Lines skipped because their kind is unknown."""
        return sum(self.unknown_kinds.values())


class EventStore(Protocol):
    """An append-only, per-thread log of events.

    Threads are named by validated ids (``InvalidThreadId`` otherwise). A
    thread's events carry ``seq`` 1, 2, 3, ... with no gaps, assigned by the
    thread's single writer, which calls ``append`` with the seq it expects the
    log to end at (optimistic concurrency). A store is used from one event loop;
    it is an async context manager that calls :meth:`aclose` on exit.
    """

    async def append(
        self, thread_id: str, events: Sequence[Event], *, expected_seq: int, durable: bool = True
    ) -> int:
        """Append ``events`` after ``expected_seq``; return the new last seq.

        The events must already carry ``seq = expected_seq + 1, + 2, ...`` and
        ``thread_id``. Raises ``SeqConflict`` if the log's last seq is not
        ``expected_seq`` (re-read it with :meth:`last_seq` and retry),
        ``InvalidSequence`` if the batch is misnumbered or for another thread
        (nothing is written), ``ThreadLocked`` if another writer owns the
        thread, ``LogWriteFailed`` if the OS refused the write or the fsync
        (the events may or may not be in the log). When it returns, the
        events are visible to readers and, unless every event in the batch is
        a delta or pipeline stage or ``durable`` is false, durable. A batch
        appended with ``durable=False`` is written at once and becomes durable
        with the next durable append, ``sync`` or ``aclose`` (the caller
        promises one comes before anything that depends on the batch). An
        empty batch checks ``expected_seq`` and writes nothing.

        A batch is all-or-nothing for other appenders and for errors raised
        before writing. A crash in the middle of an append can leave whole
        lines of a prefix of the batch (never a partial line, once the writer
        has repaired the tail): callers must not assume a batch they were not
        told about is absent.
        """
        ...

    async def claim(self, thread_id: str) -> int:
        """Become the thread's writer now, creating the thread if it has no
        log, and return its last seq. A backend with a lock takes it here
        (``ThreadLocked``) and repairs a torn tail, which appends a
        ``log_repaired`` event. ``append`` claims implicitly; claim first to
        fail early and to learn the seq a repair may have moved."""
        ...

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
        """Stream the thread's events with ``after < seq <= until`` in order,
        at most ``limit`` of them (a page: the next one starts after the last
        seq returned).

        Blocking IO, streaming: memory stays bounded whatever the log's size,
        and the events at or before ``after`` need not be decoded, so a page
        near the end of a long log costs little more than a scan. A negative
        ``limit`` raises ``ValueError``.
        Raises ``ThreadNotFound`` at once for a thread with no log; ``mode``
        decides what a bad or unknown line does (see :data:`ReadMode`).
        Events appended while the iterator runs may or may not be seen.
        """
        ...

    async def release(self, thread_id: str) -> None:
        """Stop being the thread's writer: make what was appended durable,
        release the lock and whatever it holds open, so another process can
        write the thread. Nothing to do for a thread not claimed here. The
        next ``claim`` or ``append`` takes it again; the log may then have
        grown (``claim`` returns its last seq as it is then)."""
        ...

    async def last_seq(self, thread_id: str) -> int:
        """The seq of the thread's last event; 0 for a thread with no events.
        For a thread no one has claimed this is a snapshot: claiming may
        repair a torn tail and move it, so appenders retry on ``SeqConflict``."""
        ...

    def exists(self, thread_id: str) -> bool:
        """Whether the thread has a log (possibly empty)."""
        ...

    def list_threads(self) -> list[str]:
        """The ids of every thread with a log, sorted."""
        ...

    async def sync(self, thread_id: str) -> None:
        """Make every event appended to the thread so far durable."""
        ...

    def blobs(self, thread_id: str) -> BlobStore:
        """The thread's side files (:mod:`kun.store.blobs`): content too big
        for a log line, stored once and named by its hash. A writer puts
        the content before it appends the event naming it. Validates the
        id; works whether or not the thread has a log yet."""
        ...

    async def aclose(self) -> None:
        """Sync every thread, release every lock. Reading still works;
        ``append`` and ``claim`` raise ``StoreClosed``. Idempotent."""
        ...

    async def __aenter__(self) -> Self: ...

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...


@runtime_checkable
class ChangeSource(Protocol):
    """A store that tells when other writers commit (PostgreSQL's
    ``LISTEN``/``NOTIFY``, :mod:`kun.store.pg_changes`), so followers here
    wake at once instead of at the next look at the log's end."""

    async def changes(self) -> ChangeFeed: ...


@runtime_checkable
class SharedStore(Protocol):
    """A store many workers on many machines share (PostgreSQL): requests
    reach a thread's writer wherever it runs (:mod:`kun.store.pg_control`),
    and the workers see who serves what and who died
    (:mod:`kun.store.pg_cluster`)."""

    def control(self) -> PostgresControl: ...

    def cluster(self) -> PostgresCluster: ...

    def holds(self, thread_id: str) -> bool: ...

    async def release(self, thread_id: str) -> None: ...
