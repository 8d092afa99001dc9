"""Installing a thread all at once.

An import assembles the thread in a staging home, ``<home>/.import-<random>``
(hidden, on the same filesystem, so never listed as a thread and renamed
without a copy), then renames ``threads/<id>`` into the real home. A crash
leaves at worst a staging directory, never a half-written thread; a rename
onto an existing, non-empty thread fails, so two imports cannot overwrite
each other.

Every import ends the log with ``thread_imported`` (:func:`mark_imported`):
what came before was recorded elsewhere, so a rewind never restores its
file checkpoints here. Comparing a staged thread with one already in the
home (:func:`same_thread`) looks past that last line on both sides.

Replacing a thread (``--replace``) never destroys it: :func:`replace` moves
the thread as it is to the trash (``kun restore`` brings it back), then
renames the staged one into its place. A crash between the two renames
leaves the old thread in the trash and the new one in the staging
directory, never neither; a failure of the second rename moves the old one
back.
"""

from __future__ import annotations

import errno
import os
import secrets
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kun.contracts.events import ThreadImported
from kun.portable.errors import ImportConflict
from kun.portable.previous import SourceLines
from kun.runtime.clock import now_ms
from kun.store.codec import encode_line
from kun.store.lock import lock_thread
from kun.store.paths import BLOBS_NAME, LOCK_NAME, LOG_NAME, thread_dir, threads_root

__all__ = ["fsync_tree", "install", "mark_imported", "replace", "same_thread", "staging_home"]

_MARKER = b'{"kind":"thread_imported"'
_TAIL = 1 << 16
_CHUNK = 1 << 20


@contextmanager
def staging_home(home: Path) -> Iterator[Path]:
    """A fresh staging home under ``home``, removed whatever happens."""
    home.mkdir(parents=True, exist_ok=True)
    stage = home / f".import-{secrets.token_hex(6)}"
    stage.mkdir()
    try:
        yield stage
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def fsync_tree(directory: Path) -> None:
    """Make every file under ``directory``, and the directories, durable."""
    for root, _dirs, files in os.walk(directory):
        for name in files:
            fd = os.open(os.path.join(root, name), os.O_RDONLY | os.O_CLOEXEC)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        _fsync_dir(Path(root))


def install(stage: Path, home: Path, thread_id: str, hint: str) -> None:
    """Rename the staged thread into ``home``; :class:`ImportConflict` (with
    ``hint``) if a thread of that id got there first."""
    staged = thread_dir(stage, thread_id)
    (staged / LOCK_NAME).unlink(missing_ok=True)
    fsync_tree(staged)
    root = threads_root(home)
    root.mkdir(parents=True, exist_ok=True)
    try:
        os.rename(staged, thread_dir(home, thread_id))
    except OSError as exc:
        if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
            raise ImportConflict(thread_id, hint) from None
        raise
    _fsync_dir(root)


def replace(stage: Path, home: Path, thread_id: str) -> Path:
    """Put the staged thread in place of the existing one, which goes to the
    trash (returned: where). Holds the old thread's writer lock while it
    moves, so a thread being written is refused, never swapped out under
    its writer."""
    from kun.app.trash import trash_entry

    target = thread_dir(home, thread_id)
    staged = thread_dir(stage, thread_id)
    (staged / LOCK_NAME).unlink(missing_ok=True)
    fsync_tree(staged)
    entry = trash_entry(home, thread_id)
    lock_fd = lock_thread(thread_id, target / LOCK_NAME)
    try:
        os.rename(target, entry)
        try:
            os.rename(staged, target)
        except OSError:
            os.rename(entry, target)
            raise
    finally:
        os.close(lock_fd)
    _fsync_dir(entry.parent)
    _fsync_dir(threads_root(home))
    return entry


def mark_imported(
    log: Path,
    thread_id: str,
    last_seq: int,
    source: str = "bundle",
    workspace: Path | None = None,
    lines: SourceLines | None = None,
) -> int:
    """Append ``thread_imported`` (seq ``last_seq + 1``) to the staged ``log``
    and return the size of what it follows; ``workspace``: the directory the
    thread's new turns use here; ``lines``: the session file's lines."""
    event = ThreadImported(
        seq=last_seq + 1,
        at=now_ms(),
        thread_id=thread_id,
        source=source,
        workspace=None if workspace is None else str(workspace),
        source_lines=None if lines is None else lines.count,
        source_sha256=None if lines is None else lines.sha256,
    )
    with open(log, "ab") as out:
        prefix = out.tell()
        out.write(encode_line(event))
    return prefix


def same_thread(staged: Path, existing: Path) -> bool:
    """Whether the thread at ``existing`` holds the staged log byte for byte
    (a last ``thread_imported`` line on either side aside: when it was
    imported differs) and every staged side file."""
    try:
        if not _same_log(existing / LOG_NAME, staged / LOG_NAME):
            return False
    except FileNotFoundError:
        return False
    blobs = staged / BLOBS_NAME
    names = sorted(os.listdir(blobs)) if blobs.is_dir() else []
    return all((existing / BLOBS_NAME / name).is_file() for name in names)


def _same_log(first: Path, second: Path) -> bool:
    size = _unmarked_size(first)
    if size != _unmarked_size(second):
        return False
    with open(first, "rb") as a, open(second, "rb") as b:
        while size > 0:
            n = min(size, _CHUNK)
            if a.read(n) != b.read(n):
                return False
            size -= n
    return True


def _unmarked_size(log: Path) -> int:
    """The size of ``log`` without a last ``thread_imported`` line."""
    with open(log, "rb") as file:
        size = file.seek(0, os.SEEK_END)
        file.seek(max(0, size - _TAIL))
        tail = file.read()
    start = tail.rfind(b"\n", 0, len(tail) - 1) + 1
    return size - (len(tail) - start) if tail[start:].startswith(_MARKER) else size


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
