"""The JSONL event store: one ``events.jsonl`` per thread.

Layout: ``<home>/threads/<thread_id>/events.jsonl``, one event per line, and
``writer.lock`` beside it. A store instance becomes a thread's writer on its
first ``claim`` or ``append``, and stops being it on ``release`` (its two
fds closed, the lock free for another process); the next ``claim`` or
``append`` takes it again and reads the tail afresh, so appends another
process made meanwhile are counted, and an ``expected_seq`` that missed them
is a ``SeqConflict``:

1. create the directory; take an exclusive, non-blocking ``flock`` on
   ``writer.lock`` and write our pid into it (see :mod:`kun.store.lock`):
   another process *and* another store instance in this process get
   ``ThreadLocked``; a crash never leaves a stale lock.
2. open the log ``O_APPEND`` and scan its end backwards for the last seq (one
   small read, not a replay).
3. repair a torn tail: write a ``log_repaired`` event recording what was
   dropped over it, cut the file after that event, fsync. A last line that
   holds a complete event and more is not torn (:mod:`kun.store.torn`): the
   writer refuses to open the thread (``CorruptLog``) rather than cut it.

Appends to one thread are serialized (an ``anyio.Lock``, see
:meth:`JsonlEventStore.append` for why an uncontended append skips it); each
batch is encoded once into a reused buffer and written with a single
``os.write``, so a crash of the process loses nothing ``append`` returned for.

Durability. Deltas and pipeline stages (:data:`GROUP_COMMIT_KINDS`) are group
committed: written at once, fsynced when 64 are unsynced or 5 ms have passed
since the first unsynced one (checked on each append), before any durable
append returns, and on ``sync``/``aclose``. Every other batch is fsynced
before ``append`` returns, unless appended with ``durable=False``: such a
batch is written at once and counted unsynced, but does not start an fsync
itself (not even by the 64 / 5 ms rule): the caller promises a durable append
or ``sync`` before anything depends on it (the tool ledger: a step's closing
batch rides on its first ``tool_call_started``, a tool's result on the next
durable event, see :mod:`kun.runtime.dispatch`). A process crash loses
nothing written; a machine crash can lose the deltas not yet fsynced: the
last 5 ms or 63 of them while they stream, or the trailing ones when no later
append, ``sync`` or ``aclose`` comes (the loop follows every stream with a
durable write). The fsync (``fdatasync`` where the OS has it) runs
inline on the event loop, not in a worker thread: it blocks the loop for one
fsync (~0.2 ms on an SSD), which is cheaper than a thread hop and keeps
"persist, then publish" a plain sequence.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import Self

import anyio

from kun.contracts.events import (
    AssistantReasoningDelta,
    AssistantTextDelta,
    Event,
    EventBase,
    LogRepaired,
    PipelineStage,
    ToolCallDelta,
)
from kun.store.blobs import FileBlobStore
from kun.store.codec import encode_into, encode_line
from kun.store.errors import (
    InvalidSequence,
    InvalidThreadId,
    LogWriteFailed,
    SeqConflict,
    StoreClosed,
    ThreadNotFound,
)
from kun.store.lock import lock_thread
from kun.store.paths import (
    LOCK_NAME,
    LOG_NAME,
    blobs_dir,
    log_path,
    resolve_home,
    thread_dir,
    threads_root,
    validate_thread_id,
)
from kun.store.port import ReadMode, ReadReport
from kun.store.reader import read_log
from kun.store.tail import Tail, scan_tail

__all__ = ["GROUP_COMMIT_EVENTS", "GROUP_COMMIT_KINDS", "GROUP_COMMIT_SECONDS", "JsonlEventStore"]

GROUP_COMMIT_EVENTS = 64
GROUP_COMMIT_SECONDS = 0.005
_GROUP_COMMIT_TYPES: frozenset[type[EventBase]] = frozenset(
    {AssistantTextDelta, AssistantReasoningDelta, ToolCallDelta, PipelineStage}
)
GROUP_COMMIT_KINDS: frozenset[str] = frozenset(
    str(t.__struct_config__.tag) for t in _GROUP_COMMIT_TYPES
)

_fsync = getattr(os, "fdatasync", os.fsync)
_encode_into = encode_into
_monotonic = time.monotonic


class JsonlEventStore:
    """:class:`kun.store.port.EventStore` over JSONL files under ``home``
    (``$KUN_HOME`` or ``~/.kun`` when ``None``). Use it from one event loop."""

    def __init__(self, home: str | os.PathLike[str] | None = None) -> None:
        self.home = resolve_home(home)
        self._writers: dict[str, _Writer] = {}
        self._closed = False

    async def append(
        self, thread_id: str, events: Sequence[Event], *, expected_seq: int, durable: bool = True
    ) -> int:
        """See :meth:`kun.store.port.EventStore.append`.

        The critical section (check, encode, write, fsync) never awaits, so
        on one event loop no two appends can interleave, lock or not. When the
        thread's lock is free the append therefore runs without acquiring it:
        an acquire and release cost ~2 us, a delta's whole write ~3 us. Anyone
        who must hold the lock across an await (nothing does today; an fsync
        moved to a worker thread would) makes appends queue behind it.
        """
        while True:
            writer = self._writers.get(thread_id) or self._open(thread_id)
            if not writer.lock.locked():
                return self._append(writer, events, expected_seq, durable)
            async with writer.lock:
                if writer.fd >= 0:
                    return self._append(writer, events, expected_seq, durable)

    async def claim(self, thread_id: str) -> int:
        writer = self._writers.get(thread_id) or self._open(thread_id)
        return writer.last_seq

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
        path = log_path(self.home, thread_id)
        if not path.is_file():
            raise ThreadNotFound(thread_id)
        return read_log(path, after=after, until=until, limit=limit, mode=mode, report=report)

    async def last_seq(self, thread_id: str) -> int:
        writer = self._writers.get(thread_id)
        if writer is not None:
            return writer.last_seq
        path = log_path(self.home, thread_id)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            return 0
        try:
            return scan_tail(fd, path).last_seq
        finally:
            os.close(fd)

    def exists(self, thread_id: str) -> bool:
        return log_path(self.home, thread_id).is_file()

    def list_threads(self) -> list[str]:
        try:
            entries = list(os.scandir(threads_root(self.home)))
        except FileNotFoundError:
            return []
        return sorted(
            entry.name
            for entry in entries
            if _is_thread_id(entry.name) and os.path.isfile(os.path.join(entry.path, LOG_NAME))
        )

    async def sync(self, thread_id: str) -> None:
        await self._sync(thread_id, release=False)

    async def release(self, thread_id: str) -> None:
        """See :meth:`kun.store.port.EventStore.release`."""
        await self._sync(thread_id, release=True)

    async def _sync(self, thread_id: str, *, release: bool) -> None:
        """Fsync the thread's unsynced appends; with ``release`` (or when the
        fsync fails) close its writer too."""
        writer = self._writers.get(thread_id)
        if writer is None:
            return
        async with writer.lock:
            if writer.fd < 0:
                return
            try:
                writer.sync()
            except OSError as exc:
                self._discard(writer)
                raise LogWriteFailed(writer.path, str(exc)) from exc
            if release:
                self._discard(writer)

    def holds(self, thread_id: str) -> bool:
        """Whether this store is the thread's writer now (its lock held)."""
        return thread_id in self._writers

    async def discard(self, thread_id: str) -> None:
        """Remove the thread's folder (its log, side files and caches) as
        if it had never been written: ``kun migrate`` takes back a copy
        that failed half way. The writer lock is taken first
        (``ThreadLocked`` while another writer holds it) and held until the
        folder is gone."""
        writer = self._writers.get(thread_id) or self._open(thread_id)
        async with writer.lock:
            try:
                shutil.rmtree(thread_dir(self.home, thread_id))
            except OSError as exc:
                raise LogWriteFailed(writer.path, f"cannot remove: {exc}") from exc
            finally:
                self._discard(writer)

    def blobs(self, thread_id: str) -> FileBlobStore:
        return FileBlobStore(blobs_dir(self.home, thread_id), thread_id)

    async def aclose(self) -> None:
        self._closed = True
        failure: LogWriteFailed | None = None
        for writer in list(self._writers.values()):
            async with writer.lock:
                try:
                    writer.sync()
                except OSError as exc:
                    failure = failure or LogWriteFailed(writer.path, str(exc))
                finally:
                    self._discard(writer)
        if failure is not None:
            raise failure

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def _open(self, thread_id: str) -> _Writer:
        """Become the thread's writer. Synchronous on purpose: with no await
        between the lookup in ``_writers`` and the insertion, two tasks
        cannot both open the same thread."""
        if self._closed:
            raise StoreClosed()
        directory = thread_dir(self.home, thread_id)
        path = directory / LOG_NAME
        try:
            created = _make_dirs(directory)
            lock_fd = lock_thread(thread_id, directory / LOCK_NAME)
        except OSError as exc:
            raise LogWriteFailed(path, f"cannot open for writing: {exc}") from exc
        try:
            new_log = not path.exists()
            fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
            try:
                tail = scan_tail(fd, path)
                last_seq = tail.last_seq if tail.torn is None else _repair(path, thread_id, tail)
                for synced in ([directory] if new_log else []) + created:
                    _fsync_dir(synced)
            except BaseException:
                os.close(fd)
                raise
        except OSError as exc:
            os.close(lock_fd)
            raise LogWriteFailed(path, f"cannot open for writing: {exc}") from exc
        except BaseException:
            os.close(lock_fd)
            raise
        writer = _Writer(thread_id, path, fd, lock_fd, last_seq)
        self._writers[thread_id] = writer
        return writer

    def _append(
        self, writer: _Writer, events: Sequence[Event], expected_seq: int, durable: bool
    ) -> int:
        try:
            return writer.append(events, expected_seq, durable)
        except OSError as exc:
            self._discard(writer)
            raise LogWriteFailed(writer.path, str(exc)) from exc

    def _discard(self, writer: _Writer) -> None:
        if self._writers.get(writer.thread_id) is writer:
            del self._writers[writer.thread_id]
        writer.close()


class _Writer:
    """One thread's open log and lock. Its methods are synchronous and run
    under ``lock``; an ``OSError`` from them means the writer must be
    discarded (after a failed fsync the page cache can no longer be trusted)."""

    __slots__ = (
        "buffer",
        "fd",
        "first_unsynced",
        "last_seq",
        "lock",
        "lock_fd",
        "path",
        "thread_id",
        "unsynced",
    )

    def __init__(self, thread_id: str, path: Path, fd: int, lock_fd: int, last_seq: int) -> None:
        self.thread_id = thread_id
        self.path = path
        self.fd = fd
        self.lock_fd = lock_fd
        self.last_seq = last_seq
        self.lock = anyio.Lock(fast_acquire=True)
        self.buffer = bytearray()
        self.unsynced = 0
        self.first_unsynced = 0.0

    def append(self, events: Sequence[Event], expected_seq: int, durable: bool = True) -> int:
        """Write ``events``; fsync now when one of them must be durable and
        ``durable`` is true (see the module docstring)."""
        if expected_seq != self.last_seq:
            raise SeqConflict(self.thread_id, expected_seq, self.last_seq)
        if not events:
            return expected_seq
        buffer = self.buffer
        thread_id = self.thread_id
        seq = expected_seq
        offset = 0
        must_sync = False
        for event in events:
            seq += 1
            if event.seq != seq or event.thread_id != thread_id:
                raise _misnumbered(thread_id, event, seq - expected_seq - 1, seq)
            if not must_sync and type(event) not in _GROUP_COMMIT_TYPES:
                must_sync = True
            _encode_into(event, buffer, offset)
            buffer.append(10)
            offset = len(buffer)
        written = os.write(self.fd, buffer)
        if written != offset:
            _write_all(self.fd, memoryview(buffer)[written:])
        self.last_seq = seq
        if must_sync and durable:
            _fsync(self.fd)
            self.unsynced = 0
        else:
            now = _monotonic()
            if not self.unsynced:
                self.first_unsynced = now
            self.unsynced += len(events)
            if must_sync:
                return seq
            if (
                self.unsynced >= GROUP_COMMIT_EVENTS
                or now - self.first_unsynced >= GROUP_COMMIT_SECONDS
            ):
                _fsync(self.fd)
                self.unsynced = 0
        return seq

    def sync(self) -> None:
        if self.unsynced and self.fd >= 0:
            _fsync(self.fd)
            self.unsynced = 0

    def close(self) -> None:
        """Close the log, then the lock file (which releases the lock)."""
        for fd in (self.fd, self.lock_fd):
            if fd >= 0:
                os.close(fd)
        self.fd = self.lock_fd = -1


def _misnumbered(thread_id: str, event: Event, index: int, seq: int) -> InvalidSequence:
    if event.thread_id != thread_id:
        return InvalidSequence(thread_id, index, f"belongs to thread {event.thread_id!r}")
    return InvalidSequence(thread_id, index, f"has seq {event.seq}, expected {seq}")


def _write_all(fd: int, data: memoryview) -> None:
    while data:
        data = data[os.write(fd, data) :]


def _repair(path: Path, thread_id: str, tail: Tail) -> int:
    """Replace the torn tail with a ``log_repaired`` event; return its seq.

    The record is written *over* the torn bytes (through a second fd without
    ``O_APPEND``, where ``pwrite`` honours its offset), then the file is cut
    to end after it, then fsynced. A crash at any point leaves either the old
    torn tail or the record followed by what is left of the torn bytes, which
    the next open repairs again: a repair is never lost, only repeated.
    """
    torn = tail.torn
    assert torn is not None
    event = LogRepaired(
        seq=tail.last_seq + 1,
        at=time.time_ns() // 1_000_000,
        thread_id=thread_id,
        dropped_bytes=torn.size,
        line=torn.line,
        reason=torn.reason,
        preview=torn.preview,
    )
    line = encode_line(event)
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        view = memoryview(line)
        offset = tail.good_end
        while view:
            written = os.pwrite(fd, view, offset)
            view, offset = view[written:], offset + written
        os.ftruncate(fd, offset)
        _fsync(fd)
    finally:
        os.close(fd)
    return event.seq


def _make_dirs(directory: Path) -> list[Path]:
    """Create ``directory`` and missing parents; return the parents whose
    entries changed (to fsync them), innermost first."""
    missing = []
    path = directory
    while not path.exists():
        missing.append(path)
        path = path.parent
    directory.mkdir(parents=True, exist_ok=True)
    return [created.parent for created in missing]


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _is_thread_id(name: str) -> bool:
    try:
        validate_thread_id(name)
    except InvalidThreadId:
        return False
    return True
