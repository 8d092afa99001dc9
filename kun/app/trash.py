"""``kun rm`` / ``kun restore``: a removed thread goes to the trash, whole.

Removing moves ``threads/<id>`` to ``trash/<id>-<UTC time>`` under the kun
home with one ``rename`` (the log, its side files and any kept gc
generations together), so it is all there or all still in place. Nothing in
the trash is ever deleted by kun, by age or otherwise: emptying it is the
user's ``rm -r``. Restoring renames it back, refused when a thread with that
id exists again. The thread's writer lock is held while it moves, so a
thread another process is writing (``kun serve``, a session) is refused.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from kun.errors import UserMistake
from kun.ids import new_id
from kun.store.lock import lock_thread
from kun.store.paths import LOG_NAME, lock_path, thread_dir, threads_root, validate_thread_id

__all__ = [
    "TRASH_NAME",
    "NotInTrash",
    "RestoreConflict",
    "Trashed",
    "remove_thread",
    "restore_thread",
    "trash_entry",
    "trash_root",
    "trashed",
]

TRASH_NAME = "trash"
_STAMP = "%Y%m%dT%H%M%SZ"
_ENTRY = re.compile(r"^(?P<id>.+)-(?P<stamp>\d{8}T\d{6}Z)(?:-\d+)?$")


class NotInTrash(UserMistake):
    """A restore of something the trash does not hold."""


class RestoreConflict(UserMistake):
    """A restore under an id a thread holds again."""


@dataclass(frozen=True)
class Trashed:
    """A thread in the trash: its id, when it was removed, where it is."""

    thread_id: str
    removed_at: datetime
    path: Path


def trash_root(home: Path) -> Path:
    return home / TRASH_NAME


def trash_entry(home: Path, thread_id: str, now: datetime | None = None) -> Path:
    """A free name in the trash for the thread removed ``now`` (the trash
    made if need be)."""
    stamp = (now or datetime.now(UTC)).strftime(_STAMP)
    root = trash_root(home)
    root.mkdir(parents=True, exist_ok=True)
    target = root / f"{thread_id}-{stamp}"
    number = 1
    while target.exists():
        number += 1
        target = root / f"{thread_id}-{stamp}-{number}"
    return target


def remove_thread(home: Path, thread_id: str, now: datetime | None = None) -> Path:
    """Move the thread to the trash; returns where it went."""
    source = thread_dir(home, thread_id)
    if not (source / LOG_NAME).is_file():
        raise UserMistake(f"no thread {thread_id!r} under {home}")
    target = trash_entry(home, thread_id, now)
    fd = lock_thread(thread_id, lock_path(home, thread_id))
    try:
        os.rename(source, target)
    finally:
        os.close(fd)
    return target


def trashed(home: Path) -> list[Trashed]:
    """The threads in the trash, most recently removed first."""
    root = trash_root(home)
    entries = []
    for path in root.iterdir() if root.is_dir() else ():
        match = _ENTRY.match(path.name)
        if match is None or not (path / LOG_NAME).is_file():
            continue
        when = datetime.strptime(match["stamp"], _STAMP).replace(tzinfo=UTC)
        entries.append(Trashed(match["id"], when, path))
    return sorted(entries, key=lambda t: (t.removed_at, t.path.name), reverse=True)


def restore_thread(home: Path, name: str, as_id: str | None = None) -> str:
    """Move a thread back from the trash: ``name`` is a thread id (its most
    recent removal) or a trash entry's name; ``as_id``: under another id
    (when its own is taken again, say by a re-import that replaced it).
    Returns the thread id. ``trash/NAME`` (an entry as the API names it,
    relative to the home) is ``NAME``."""
    name = name.removeprefix("trash/")
    entries = trashed(home)
    chosen = next((t for t in entries if t.path.name == name), None)
    chosen = chosen or next((t for t in entries if t.thread_id == name), None)
    if chosen is None:
        raise NotInTrash(f"no thread {name!r} in the trash ({trash_root(home)})")
    thread_id = validate_thread_id(chosen.thread_id)
    wanted = thread_id if as_id is None else validate_thread_id(as_id)
    target = thread_dir(home, wanted)
    if target.exists():
        if as_id is not None:
            raise RestoreConflict(f"thread {wanted!r} exists; give --as another id")
        restore, remove = ("restore", chosen.path.name, "--as", new_id("thr")), ("rm", thread_id)
        again = RestoreConflict(
            f"thread {thread_id!r} exists again; {shlex.join(['kun', *restore])} restores it "
            f"beside it (or move the current one away first: {shlex.join(['kun', *remove])})"
        )
        again.suggests, again.also_suggests = restore, (remove,)
        raise again
    threads_root(home).mkdir(parents=True, exist_ok=True)
    os.rename(chosen.path, target)
    if wanted != thread_id:
        _rethread(target, thread_id, wanted)
    return wanted


def _rethread(directory: Path, old_id: str, new_id: str) -> None:
    """Make the log in ``directory`` thread ``new_id``'s (lines that name
    their thread are rewritten; the file is replaced at once) and drop the
    snapshot, a cache that names the old id."""
    from kun.portable.rethread import rethread_log
    from kun.store.snapshot import SNAPSHOT_NAME

    log = directory / LOG_NAME
    temporary = directory / f".{LOG_NAME}.rethread"
    rethread_log(log, temporary, old_id, new_id)
    os.replace(temporary, log)
    (directory / SNAPSHOT_NAME).unlink(missing_ok=True)
