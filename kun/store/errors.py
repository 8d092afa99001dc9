"""Errors raised by the event store.

::

    KunError
    ├── UserMistake
    │   ├── InvalidThreadId     a thread id that may not touch the filesystem
    │   ├── HomeNotADirectory   the kun home names a file
    │   └── ThreadNotFound      reading a thread that has no log
    └── RuntimeFailure
        ├── SeqConflict         append's expected last seq is not the log's
        ├── InvalidSequence     a batch not numbered expected+1, +2, ... or for
        │                       another thread
        ├── ThreadLocked        another writer (process or store) owns the thread
        ├── LogWriteFailed      the OS refused a write or fsync; the writer was
        │                       closed and reopens (and re-checks the log) on the
        │                       next append
        ├── StoreClosed         the store was used after ``aclose``
        ├── StoreUnavailable    the database could not be reached or refused a
        │   │                   statement (a store over a database only)
        │   └── SchemaTooNew    the database's kun schema is newer than this kun
        └── CorruptLog          a bad line where a good one must be
            └── UnknownEventKind  strict replay met a kind this version does not
                                  know (a log written by a newer kun)

Every error carries its facts as attributes; callers classify by type and read
the attributes, never the message. Where a file is named (``path``,
``lock_path``), a store over a database names the thread's log or lock in it
instead, as a string that never holds a password.
"""

from __future__ import annotations

from pathlib import Path

from kun.errors import RuntimeFailure, UserMistake

__all__ = [
    "CorruptLog",
    "HomeNotADirectory",
    "InvalidSequence",
    "InvalidThreadId",
    "LogWriteFailed",
    "SchemaTooNew",
    "SeqConflict",
    "StoreClosed",
    "StoreUnavailable",
    "ThreadLocked",
    "ThreadNotFound",
    "UnknownEventKind",
]


class InvalidThreadId(UserMistake):
    """Raised before a thread id reaches the filesystem when it breaks a rule."""

    def __init__(self, thread_id: object, rule: str) -> None:
        self.thread_id = thread_id
        self.rule = rule
        super().__init__(f"invalid thread id {thread_id!r}: {rule}")


class HomeNotADirectory(UserMistake):
    """Raised when the kun home names a file: every command would otherwise
    fail later with a message about some path inside it, or list nothing."""

    def __init__(self, home: Path, source: str) -> None:
        self.home = home
        super().__init__(f"the kun home {home} ({source}) is not a directory")


class ThreadNotFound(UserMistake):
    """Raised by ``read`` for a thread with no log."""

    def __init__(self, thread_id: str) -> None:
        self.thread_id = thread_id
        super().__init__(f"thread {thread_id!r} not found")


class SeqConflict(RuntimeFailure):
    """Raised by ``append`` when ``expected_seq`` is not the log's last seq:
    someone else appended first. Re-read the last seq and retry."""

    def __init__(self, thread_id: str, expected: int, actual: int) -> None:
        self.thread_id = thread_id
        self.expected = expected
        self.actual = actual
        super().__init__(
            f"thread {thread_id!r}: append expected last seq {expected}, "
            f"but the log's last seq is {actual}"
        )


class InvalidSequence(RuntimeFailure):
    """Raised by ``append`` for a batch that is not numbered consecutively from
    ``expected_seq + 1`` or carries another thread's id. Nothing is written."""

    def __init__(self, thread_id: str, index: int, reason: str) -> None:
        self.thread_id = thread_id
        self.index = index
        self.reason = reason
        super().__init__(f"thread {thread_id!r}: event {index} of the batch: {reason}")


class ThreadLocked(RuntimeFailure):
    """Raised when another writer holds the thread's lock file (or, in a
    database, its lock: ``lock_path`` is then a string naming it). ``kind``
    and ``url`` are what the holder said it is
    (:func:`kun.store.lock.set_holder`): a thread ``kun serve`` writes is
    named as such, with the way through it."""

    def __init__(
        self,
        thread_id: str,
        lock_path: Path | str,
        holder_pid: int | None,
        *,
        kind: str = "",
        url: str = "",
    ) -> None:
        self.thread_id = thread_id
        self.lock_path = lock_path
        self.holder_pid = holder_pid
        self.kind = kind
        self.url = url
        if kind:
            where = f"process {holder_pid}, {url}" if url else f"process {holder_pid}"
            server = url or "URL"
            message = (
                f"thread {thread_id!r} is being written by {kind} ({where}): a turn runs or "
                f"waits for an answer there; go through it (kun --server {server} resume "
                f"{thread_id}, or kun --server {server} run --thread {thread_id} PROMPT), "
                "or wait until it ends"
            )
        else:
            holder = "an unknown process" if holder_pid is None else f"process {holder_pid}"
            lock = f"lock file {lock_path}" if isinstance(lock_path, Path) else lock_path
            message = (
                f"thread {thread_id!r} is being written by {holder} "
                f"({lock}); only one writer per thread is allowed"
            )
        super().__init__(message)


class LogWriteFailed(RuntimeFailure):
    """Raised when writing or fsyncing the log fails. The events of the failed
    append may or may not be in the log: the next append reopens the writer,
    which re-reads the tail, so a retry sees either ``SeqConflict`` (they are
    there) or success."""

    def __init__(self, path: Path | str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: write failed: {reason}")


class StoreClosed(RuntimeFailure):
    """Raised by ``append`` and ``claim`` after the store was closed."""

    def __init__(self) -> None:
        super().__init__("the event store is closed")


class StoreUnavailable(RuntimeFailure):
    """Raised by a store over a database when the database cannot be reached
    or refuses a statement. ``where`` names the database (its URL without
    the password), ``reason`` says what failed; ``sqlstate`` is the
    server's error code when it gave one."""

    def __init__(self, where: str, reason: str, sqlstate: str | None = None) -> None:
        self.where = where
        self.reason = reason
        self.sqlstate = sqlstate
        super().__init__(f"{where}: {reason}")


class SchemaTooNew(StoreUnavailable):
    """Raised when a database holds a kun schema newer than this kun knows:
    a newer kun created or migrated it, and this one would misread it."""

    def __init__(self, where: str, found: int, known: int) -> None:
        self.found = found
        self.known = known
        super().__init__(
            where,
            f"its kun schema is version {found}, newer than this kun's version {known}; "
            "upgrade kun to use this database",
        )


class CorruptLog(RuntimeFailure):
    """A line that must be a good event is not (a torn *last* line is not an
    error: readers report it, the writer repairs it).

    ``line`` is 1-based (in a database, where each event is a row, the
    row's seq); ``last_good_seq`` is the seq of the last event decoded
    before the bad line (0 if none), so the log can be cut there by hand.
    """

    def __init__(self, path: Path | str, line: int, last_good_seq: int, reason: str) -> None:
        self.path = path
        self.line = line
        self.last_good_seq = last_good_seq
        self.reason = reason
        super().__init__(f"{path}: line {line}: {reason} (last good seq {last_good_seq})")


class UnknownEventKind(CorruptLog):
    """Strict replay met a kind this version of kun does not know."""

    def __init__(self, path: Path | str, line: int, last_good_seq: int, kind: str) -> None:
        self.kind = kind
        super().__init__(
            path,
            line,
            last_good_seq,
            f"unknown event kind {kind!r} (written by a newer kun? replay in tolerant mode)",
        )
