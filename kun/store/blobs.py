"""Side files: content too big for a log line, stored once beside the log.

A thread's log stays a sequence of small lines even when a tool prints a
megabyte: the content goes to ``<thread dir>/blobs/<sha256>`` and the event
carries a :class:`~kun.contracts.items.BlobRef` (the hash and the size).
Content-addressed, so the same bytes are stored once however often they
recur, a file never changes once written, and a reader can check what it
got: :meth:`BlobStore.get` verifies size and hash and raises
:class:`BlobMissing` or :class:`BlobAltered` naming the thread and the file
rather than hand back something that is not what was recorded.

Ordering is the writer's promise: :meth:`BlobStore.put` returns only once
the file is durable (written to a temporary name, fsynced, renamed into
place, directory fsynced), and the event naming it is appended after that,
so a crash can leave a side file nothing names (harmless; garbage collection
is issue 13's) but never an event naming a side file that is not there.

Nothing here knows about events or items: callers decide what goes to a side
file (:mod:`kun.runtime.sidefiles`). The stores are synchronous, blocking
IO; the runtime calls them from a worker thread.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
from contextlib import suppress
from pathlib import Path
from typing import Protocol

from kun.contracts.items import BlobRef
from kun.errors import RuntimeFailure

__all__ = [
    "BlobAltered",
    "BlobError",
    "BlobMissing",
    "BlobStore",
    "FileBlobStore",
    "MemoryBlobStore",
    "blob_ref",
]

_SHA256 = re.compile(r"[0-9a-f]{64}")
_TEMP_SUFFIX = ".kun-tmp"
_fsync = getattr(os, "fdatasync", os.fsync)


class BlobError(RuntimeFailure):
    """A side file could not be read as recorded. ``where`` names it (a path
    for files); the log line that references it is intact."""

    def __init__(self, thread_id: str, where: str, ref: BlobRef, reason: str) -> None:
        self.thread_id = thread_id
        self.where = where
        self.ref = ref
        self.reason = reason
        super().__init__(f"thread {thread_id!r}: side file {where}: {reason}")


class BlobMissing(BlobError):
    """The side file an event names is not there."""


class BlobAltered(BlobError):
    """The side file is there but is not what was recorded (other size or
    hash), or the reference itself is not a SHA-256 (a hand-edited log)."""


def blob_ref(data: bytes) -> BlobRef:
    """The reference ``data`` is stored under."""
    return BlobRef(sha256=hashlib.sha256(data).hexdigest(), size=len(data))


class BlobStore(Protocol):
    """One thread's side files. ``put`` is idempotent; ``get`` returns exactly
    the bytes ``put`` was given or raises :class:`BlobError`."""

    thread_id: str

    def put(self, data: bytes) -> BlobRef:
        """Store ``data`` (once: the same bytes again are not rewritten) and
        return its reference; durable when it returns."""
        ...

    def get(self, ref: BlobRef) -> bytes:
        """The content of ``ref``, checked against its size and hash."""
        ...

    def where(self, ref: BlobRef) -> str:
        """Where ``ref`` is (or would be) kept, for messages."""
        ...


class FileBlobStore:
    """Side files in a directory (``<thread dir>/blobs``), one per content,
    named by its hash; created with the first ``put``."""

    def __init__(self, directory: Path, thread_id: str) -> None:
        self.directory = directory
        self.thread_id = thread_id

    def where(self, ref: BlobRef) -> str:
        return str(self.directory / ref.sha256)

    def put(self, data: bytes) -> BlobRef:
        ref = blob_ref(data)
        path = self.directory / ref.sha256
        if _holds(path, ref):
            return ref
        created = not self.directory.is_dir()
        self.directory.mkdir(parents=True, exist_ok=True)
        _write_atomically(self.directory, ref.sha256, data)
        if created:
            _fsync_dir(self.directory.parent)
        return ref

    def get(self, ref: BlobRef) -> bytes:
        _check_name(self, ref)
        try:
            with open(self.directory / ref.sha256, "rb") as file:
                data = file.read(ref.size + 1)
        except FileNotFoundError:
            raise BlobMissing(self.thread_id, self.where(ref), ref, "missing") from None
        except OSError as exc:
            raise BlobMissing(self.thread_id, self.where(ref), ref, str(exc)) from exc
        return _checked(self, ref, data)


class MemoryBlobStore:
    """Side files in a dict: the same contract for the in-memory event store."""

    def __init__(self, thread_id: str) -> None:
        self.thread_id = thread_id
        self.blobs: dict[str, bytes] = {}

    def where(self, ref: BlobRef) -> str:
        return f"memory:{self.thread_id}/blobs/{ref.sha256}"

    def put(self, data: bytes) -> BlobRef:
        ref = blob_ref(data)
        self.blobs.setdefault(ref.sha256, bytes(data))
        return ref

    def get(self, ref: BlobRef) -> bytes:
        _check_name(self, ref)
        data = self.blobs.get(ref.sha256)
        if data is None:
            raise BlobMissing(self.thread_id, self.where(ref), ref, "missing")
        return _checked(self, ref, data)


def _check_name(store: BlobStore, ref: BlobRef) -> None:
    """A reference comes from a log, which may have been edited: it must be
    a hash before it becomes a file name."""
    if _SHA256.fullmatch(ref.sha256) is None or ref.size < 0:
        where = f"{ref.sha256[:80]!r}"
        raise BlobAltered(store.thread_id, where, ref, "not a SHA-256 reference")


def _checked(store: BlobStore, ref: BlobRef, data: bytes) -> bytes:
    if len(data) != ref.size:
        shown = f"{len(data)}" if len(data) <= ref.size else f"more than {ref.size}"
        reason = f"altered: {shown} bytes, recorded {ref.size}"
        raise BlobAltered(store.thread_id, store.where(ref), ref, reason)
    if hashlib.sha256(data).hexdigest() != ref.sha256:
        raise BlobAltered(
            store.thread_id, store.where(ref), ref, "altered: content does not match its hash"
        )
    return data


def _holds(path: Path, ref: BlobRef) -> bool:
    """Whether ``path`` already holds the content: same size and hash (a
    damaged copy is replaced, not trusted)."""
    try:
        if path.stat().st_size != ref.size:
            return False
        return hashlib.sha256(path.read_bytes()).hexdigest() == ref.sha256
    except OSError:
        return False


def _write_atomically(directory: Path, name: str, data: bytes) -> None:
    """``directory/name`` holds ``data`` in full or does not exist, crash or
    not: a temporary file, fsynced, renamed into place, the directory
    fsynced. (Not :mod:`kun.tools.atomic`: the store must not depend on the
    tools, and a new, immutable file needs no owner or mode carried over.)"""
    temp = directory / f".{name}.{secrets.token_hex(4)}{_TEMP_SUFFIX}"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            _fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, directory / name)
    except BaseException:
        with suppress(OSError):
            os.unlink(temp)
        raise
    _fsync_dir(directory)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
