"""The PostgreSQL event store: threads in one database that many workers on
many machines share.

Layout (:mod:`kun.store.pg_schema`): one ``events`` row per event, keyed
``(thread_id, seq)``, holding the event as the JSONL store writes it; one
``threads`` row per thread, which lists it and holds its last seq; side files
in the content-addressed ``blobs`` table, so nothing lives on one worker's
disk. Reads decode with the JSONL codec (:mod:`kun.store.pg_rows`), so a
log reads the same from either store.

Appends. A batch is one statement: a compare-and-set of the thread's
``last_seq`` from ``expected_seq`` to the batch's last seq, and the insert
of its rows, which happens only if the compare-and-set did. A concurrent
append to the same thread waits for the row, then finds ``last_seq`` moved
and writes nothing: ``SeqConflict``, as a JSONL writer that missed an
append gets. The primary key backs it: a row already at one of the batch's
seqs (whatever wrote it) fails the statement with a unique violation, which
is a ``SeqConflict`` too.

Writers. A store becomes a thread's writer on ``claim`` (or its first
``append``) by taking a session-level advisory lock keyed on the thread id,
held on one connection the store keeps for its locks; another store,
here or on another machine, gets ``ThreadLocked`` (naming the holder's pid
when it is a kun). ``release`` and ``aclose`` let go; a lost connection lets
go of every lock on it, and the compare-and-set still keeps the log whole.

Durability. An append commits before it returns. Deltas and pipeline stages
(:data:`~kun.store.jsonl.GROUP_COMMIT_KINDS`), and batches appended with
``durable=False``, commit with ``synchronous_commit`` off: visible at once,
durable with the next durable commit (any, since the WAL is one stream),
``sync`` or ``aclose``, or within the server's WAL writer delay.

Connections (:mod:`kun.store.pg_connections`): a pool for the async
methods and one for the blocking ones, opened on first use, when the schema
is created or checked. After ``aclose`` reads still work, each on a
connection of its own. Driver errors become ``StoreUnavailable``
(``LogWriteFailed`` while writing), whose messages name the database by its
URL without the password.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Sequence
from types import TracebackType
from typing import Any, Self

import anyio
import psycopg
from psycopg import errors as pg_errors

from kun.contracts.events import EVENT_TYPES, Event, EventBase
from kun.store.codec import encode_line
from kun.store.errors import (
    InvalidSequence,
    LogWriteFailed,
    SeqConflict,
    StoreClosed,
    ThreadLocked,
    ThreadNotFound,
)
from kun.store.jsonl import GROUP_COMMIT_KINDS
from kun.store.paths import validate_thread_id
from kun.store.pg_changes import ChangeFeed, notify_sql
from kun.store.pg_cluster import PostgresCluster
from kun.store.pg_connections import AsyncConnection, Connections
from kun.store.pg_control import PostgresControl
from kun.store.pg_rows import PAGE_ROWS, PostgresBlobStore, read_rows
from kun.store.pg_schema import Target, advisory_key
from kun.store.port import ReadMode, ReadReport

__all__ = ["PostgresEventStore"]

_KIND: dict[type[EventBase], str] = {t: str(t.__struct_config__.tag) for t in EVENT_TYPES}
_MAX_SEQ = 2**63 - 1
_MODES = ("strict", "tolerant", "skip_bad")

_APPEND = f"""
WITH summary AS (
    UPDATE threads SET last_seq = %(last)s, updated_at = %(at)s
    WHERE thread_id = %(thread)s AND last_seq = %(expected)s
    RETURNING thread_id, last_seq
), notified AS (
    SELECT {notify_sql("summary.thread_id", "summary.last_seq")} FROM summary
)
INSERT INTO events (thread_id, seq, kind, at, line)
SELECT summary.thread_id, e.seq, e.kind, e.at, e.line
FROM summary, notified,
    unnest(%(seqs)s::bigint[], %(kinds)s::text[], %(ats)s::bigint[], %(lines)s::bytea[])
    AS e (seq, kind, at, line)
"""
"""The compare-and-set, the rows, and the notification of the new last seq
to the other workers (:mod:`kun.store.pg_changes`; delivered at commit)."""
_ASYNC_COMMIT = "SET LOCAL synchronous_commit TO off"
_CREATE_THREAD = """
INSERT INTO threads (thread_id, created_at, updated_at, last_seq) VALUES (%s, %s, %s, 0)
ON CONFLICT (thread_id) DO NOTHING
"""
_WRITER = "UPDATE threads SET writer_pid = %s, writer_since = %s WHERE thread_id = %s"
_UNWRITER = """
UPDATE threads SET writer_pid = NULL, writer_since = NULL
WHERE thread_id = %s AND writer_pid = %s AND writer_since = %s
"""
_SESSION = "SELECT pid, backend_start FROM pg_stat_activity WHERE pid = pg_backend_pid()"
_LAST_SEQ = "SELECT last_seq FROM threads WHERE thread_id = %s"
_LOG_END = "SELECT coalesce(max(seq), 0) FROM events WHERE thread_id = %s"
_EXISTS = "SELECT 1 FROM threads WHERE thread_id = %s"
_LIST = "SELECT thread_id FROM threads"
_PAGE = """
SELECT seq, line FROM events WHERE thread_id = %s AND seq > %s AND seq <= %s ORDER BY seq LIMIT %s
"""
_DISCARD = (
    "DELETE FROM events WHERE thread_id = %s",
    "DELETE FROM waiting WHERE thread_id = %s",
    "DELETE FROM threads WHERE thread_id = %s",
)
_FLUSH = "SELECT pg_current_xact_id()"
"""A transaction that takes an xid writes a commit record and, committed
synchronously, flushes the WAL up to it: every commit before it is durable."""
_TRY_LOCK = "SELECT pg_try_advisory_lock(%s)"
_UNLOCK = "SELECT pg_advisory_unlock(%s)"
_HOLDER = """
SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
    AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
    AND l.classid::int8 = %s AND l.objid::int8 = %s
"""
_APPLICATION = "kun"


class PostgresEventStore:
    """:class:`kun.store.port.EventStore` over a PostgreSQL database named
    by ``url`` (``postgresql://user:password@host:port/dbname``, or a libpq
    connection string). ``max_connections`` bounds each of its two pools;
    ``timeout`` is how long to wait for a pooled connection. Use it from one
    event loop; its side files from any thread."""

    def __init__(self, url: str, *, max_connections: int = 10, timeout: float = 30.0) -> None:
        self._target = Target(url)
        self.where = self._target.where
        self._db = Connections(self._target, max_connections, timeout)
        self._locker: AsyncConnection | None = None
        self._session: tuple[int, Any] | None = None
        self._claiming = anyio.Lock()
        self._held: set[str] = set()
        self._async_commits = 0
        self._flushed = 0
        self._closed = False

    def __repr__(self) -> str:
        return f"PostgresEventStore({self.where!r})"

    async def append(
        self, thread_id: str, events: Sequence[Event], *, expected_seq: int, durable: bool = True
    ) -> int:
        """See :meth:`kun.store.port.EventStore.append`."""
        validate_thread_id(thread_id)
        params, must_sync = _batch(thread_id, events, expected_seq)
        if self._closed:
            raise StoreClosed()
        if thread_id not in self._held:
            await self.claim(thread_id)
        if not events:
            last = await self.last_seq(thread_id)
            if last != expected_seq:
                raise SeqConflict(thread_id, expected_seq, last)
            return expected_seq
        durable_now = durable and must_sync
        commits = self._async_commits
        if await self._write(thread_id, params, durable_now) != len(events):
            raise SeqConflict(thread_id, expected_seq, await self._log_end(thread_id))
        if durable_now:
            self._flushed = max(self._flushed, commits)
        else:
            self._async_commits += 1
        return expected_seq + len(events)

    async def claim(self, thread_id: str) -> int:
        validate_thread_id(thread_id)
        if self._closed:
            raise StoreClosed()
        async with self._claiming:
            if thread_id not in self._held:
                await self._lock(thread_id)
        now = time.time_ns() // 1_000_000
        session = self._session
        async with self._db.connection() as conn, conn.pipeline():
            await conn.execute(_CREATE_THREAD, [thread_id, now, now])
            if session is not None:
                await conn.execute(_WRITER, [*session, thread_id])
            row = await (await conn.execute(_LAST_SEQ, [thread_id])).fetchone()
        assert row is not None
        return int(row[0])

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
        if mode not in _MODES:
            raise ValueError(f"unknown read mode {mode!r}")
        if limit is not None and limit < 0:
            raise ValueError(f"limit must not be negative, got {limit}")
        if not self.exists(thread_id):
            raise ThreadNotFound(thread_id)
        top = _MAX_SEQ if until is None else until

        def rows(last: int, count: int) -> list[tuple[int, bytes]]:
            with self._db.sync_connection() as conn:
                cursor = conn.execute(_PAGE, [thread_id, last, top, count], binary=True)
                return [(seq, line) for seq, line in cursor.fetchall()]

        report = ReadReport() if report is None else report
        where = f"{self.where} thread {thread_id}"
        return read_rows(rows, thread_id, where, after=after, limit=limit, mode=mode, report=report)

    def lines(self, thread_id: str, *, after: int = 0) -> Iterator[bytes]:
        """The thread's rows after seq ``after`` as the lines of its
        ``events.jsonl`` (newline included), undecoded: what a copy of the
        log into a home, or ``GET .../log``, hands on byte for byte, kinds
        this kun does not know included. ``ThreadNotFound`` for no thread."""
        validate_thread_id(thread_id)
        if not self.exists(thread_id):
            raise ThreadNotFound(thread_id)
        last = after
        while True:
            with self._db.sync_connection() as conn:
                cursor = conn.execute(_PAGE, [thread_id, last, _MAX_SEQ, PAGE_ROWS], binary=True)
                page = cursor.fetchall()
            for seq, line in page:
                last = seq
                yield bytes(line) + b"\n"
            if len(page) < PAGE_ROWS:
                return

    async def discard(self, thread_id: str) -> None:
        """Remove the thread, its events and its row, as if it had never
        been written (``kun migrate`` takes back a copy that failed half
        way). Side files stay: the ``blobs`` table is shared by every
        thread. Claims the thread first (``ThreadLocked`` while another
        writer holds it) and lets it go after."""
        await self.claim(thread_id)
        try:
            async with self._db.connection() as conn, conn.transaction():
                for statement in _DISCARD:
                    await conn.execute(statement, [thread_id])
        finally:
            await self.release(thread_id)

    async def release(self, thread_id: str) -> None:
        """See :meth:`kun.store.port.EventStore.release`."""
        validate_thread_id(thread_id)
        if thread_id not in self._held:
            return
        await self.sync(thread_id)
        async with self._claiming:
            self._held.discard(thread_id)
            locker = self._locker
            if locker is None or locker.closed:
                return
            try:
                if self._session is not None:
                    await locker.execute(_UNWRITER, [thread_id, *self._session])
                await locker.execute(_UNLOCK, [_thread_key(thread_id)])
            except psycopg.Error:
                await self._drop_locker()  # the session is gone, and its locks with it

    async def last_seq(self, thread_id: str) -> int:
        validate_thread_id(thread_id)
        async with self._db.connection() as conn:
            row = await (await conn.execute(_LAST_SEQ, [thread_id])).fetchone()
        return 0 if row is None else int(row[0])

    def exists(self, thread_id: str) -> bool:
        validate_thread_id(thread_id)
        with self._db.sync_connection() as conn:
            return conn.execute(_EXISTS, [thread_id]).fetchone() is not None

    def list_threads(self) -> list[str]:
        with self._db.sync_connection() as conn:
            return sorted(str(row[0]) for row in conn.execute(_LIST).fetchall())

    async def sync(self, thread_id: str) -> None:
        validate_thread_id(thread_id)
        await self._flush()

    def holds(self, thread_id: str) -> bool:
        """Whether this store is the thread's writer now (its lock held)."""
        return thread_id in self._held

    async def writer_alive(self, thread_id: str) -> bool:
        """Whether some store, here or on another machine, is the thread's
        writer now (a session holds its advisory lock)."""
        unsigned = _thread_key(thread_id) & 0xFFFF_FFFF_FFFF_FFFF
        async with self._db.connection() as conn:
            cursor = await conn.execute(_HOLDER, [unsigned >> 32, unsigned & 0xFFFF_FFFF])
            return await cursor.fetchone() is not None

    async def try_claim(self, thread_id: str) -> bool:
        """:meth:`claim` when nobody else writes the thread: whether this
        store is its writer now."""
        try:
            await self.claim(thread_id)
        except ThreadLocked:
            return False
        return True

    def cluster(self) -> PostgresCluster:
        """The workers sharing this database (:mod:`kun.store.pg_cluster`)."""
        return PostgresCluster(self._db, self.session, self.try_claim)

    def control(self) -> PostgresControl:
        """Requests for the worker that writes a thread, and their replies
        (:mod:`kun.store.pg_control`)."""
        return PostgresControl(self._db, self.writer_alive)

    async def changes(self) -> ChangeFeed:
        """Every writer's commits from now on (:mod:`kun.store.pg_changes`),
        on a connection of its own; close the feed when done."""
        await self._db.open()
        with self._db.translated():
            conn = await self._db.connect("kun-changes")
            try:
                return await ChangeFeed.open(conn)
            except BaseException:
                await conn.close()
                raise

    def blobs(self, thread_id: str) -> PostgresBlobStore:
        validate_thread_id(thread_id)
        return PostgresBlobStore(self._db.sync_connection, thread_id, self.where)

    async def aclose(self) -> None:
        """See :meth:`kun.store.port.EventStore.aclose`: flush what was
        committed asynchronously, close the lock connection (which lets go
        of every lock) and both pools."""
        self._closed = True
        try:
            await self._flush()
        finally:
            self._held.clear()
            await self._drop_locker()
            await self._db.aclose()

    async def __aenter__(self) -> Self:
        """Connect, and create or check the schema, now."""
        await self._db.open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def _write(self, thread_id: str, params: dict[str, Any], durable: bool) -> int:
        """Run the append statement; the number of rows it wrote (0 when the
        compare-and-set or the primary key refused the batch)."""
        async with self._db.connection() as conn:
            try:
                async with conn.pipeline(), conn.transaction():
                    if not durable:
                        await conn.execute(_ASYNC_COMMIT)
                    cursor = await conn.execute(_APPEND, params)
            except pg_errors.UniqueViolation:
                return 0
            except psycopg.OperationalError as exc:
                where = f"{self.where} thread {thread_id}"
                raise LogWriteFailed(where, self._target.reason(exc)) from None
            return cursor.rowcount

    async def _log_end(self, thread_id: str) -> int:
        """The seq of the thread's last row: what a refused append ran into
        (the thread's ``last_seq``, unless a row was written around it)."""
        async with self._db.connection() as conn:
            row = await (await conn.execute(_LOG_END, [thread_id])).fetchone()
        return 0 if row is None else int(row[0])

    async def _flush(self) -> None:
        """Make every commit so far durable, if some were asynchronous."""
        target = self._async_commits
        if self._flushed >= target:
            return
        async with self._db.connection() as conn:
            await conn.execute(_FLUSH)
        self._flushed = max(self._flushed, target)

    async def _lock(self, thread_id: str) -> None:
        """Take the thread's advisory lock, or raise ``ThreadLocked``."""
        key = _thread_key(thread_id)
        locker = await self._lock_connection()
        try:
            row = await (await locker.execute(_TRY_LOCK, [key])).fetchone()
            if row is not None and row[0]:
                self._held.add(thread_id)
                return
            unsigned = key & 0xFFFF_FFFF_FFFF_FFFF
            cursor = await locker.execute(_HOLDER, [unsigned >> 32, unsigned & 0xFFFF_FFFF])
            holder = await cursor.fetchone()
        except psycopg.Error as exc:
            await self._drop_locker()
            raise self._target.unavailable(exc) from None
        lock = f"advisory lock in {self.where}"
        raise ThreadLocked(thread_id, lock, None if holder is None else _pid(holder[0]))

    async def _lock_connection(self) -> AsyncConnection:
        """The connection that holds this store's locks; a new one (and no
        locks held) when the last one broke."""
        locker = self._locker
        if locker is not None and not locker.closed:
            return locker
        self._held.clear()
        await self._db.open()
        with self._db.translated():
            locker = await self._db.connect(f"{_APPLICATION} {os.getpid()}")
            row = await (await locker.execute(_SESSION)).fetchone()
        assert row is not None
        self._locker, self._session = locker, (int(row[0]), row[1])
        return locker

    async def session(self) -> tuple[int, Any]:
        """The database session that holds this store's locks, as
        ``(pid, backend_start)``: what names this worker in the ``threads``
        and ``workers`` tables (it is alive exactly as long as its locks)."""
        await self._lock_connection()
        assert self._session is not None
        return self._session

    async def _drop_locker(self) -> None:
        locker, self._locker, self._session = self._locker, None, None
        if locker is not None:
            self._held.clear()
            await locker.close()


def _batch(
    thread_id: str, events: Sequence[Event], expected_seq: int
) -> tuple[dict[str, Any], bool]:
    """The append statement's parameters for ``events``, and whether one of
    them must be durable at once; ``InvalidSequence`` for a misnumbered
    batch or another thread's event."""
    seqs: list[int] = []
    kinds: list[str] = []
    ats: list[int] = []
    lines: list[bytes] = []
    must_sync = False
    for index, event in enumerate(events):
        seq = expected_seq + 1 + index
        if event.thread_id != thread_id:
            raise InvalidSequence(thread_id, index, f"belongs to thread {event.thread_id!r}")
        if event.seq != seq:
            raise InvalidSequence(thread_id, index, f"has seq {event.seq}, expected {seq}")
        kind = _KIND[type(event)]
        must_sync = must_sync or kind not in GROUP_COMMIT_KINDS
        seqs.append(seq)
        kinds.append(kind)
        ats.append(event.at)
        lines.append(encode_line(event)[:-1])
    params = {
        "thread": thread_id,
        "expected": expected_seq,
        "last": expected_seq + len(events),
        "at": ats[-1] if ats else 0,
        "seqs": seqs,
        "kinds": kinds,
        "ats": ats,
        "lines": lines,
    }
    return params, must_sync


def _thread_key(thread_id: str) -> int:
    return advisory_key(f"thread {thread_id}")


def _pid(application_name: object) -> int | None:
    """The pid a kun holder put in its connection's application name."""
    name, _, pid = str(application_name).partition(" ")
    return int(pid) if name == _APPLICATION and pid.isdigit() else None
