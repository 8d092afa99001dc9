"""Where threads live on disk, and which thread ids may get there.

Layout: ``<home>/threads/<thread_id>/events.jsonl`` plus ``writer.lock`` beside
it, and ``blobs/`` for the thread's side files (:mod:`kun.store.blobs`). A
thread id becomes a directory name, so it is validated before it touches the
filesystem: ``[A-Za-z0-9._-]``, 1 to 128 characters, no leading ``.`` and no
``..`` anywhere. That rules out path separators, control characters, hidden
files and traversal on every platform kun runs on.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from kun.store.errors import HomeNotADirectory, InvalidThreadId

__all__ = [
    "BLOBS_NAME",
    "LOCK_NAME",
    "LOG_NAME",
    "MAX_THREAD_ID_LENGTH",
    "blobs_dir",
    "lock_path",
    "log_path",
    "resolve_home",
    "thread_dir",
    "threads_root",
    "validate_thread_id",
]

MAX_THREAD_ID_LENGTH = 128
LOG_NAME = "events.jsonl"
LOCK_NAME = "writer.lock"
BLOBS_NAME = "blobs"

_ALLOWED = re.compile(r"[A-Za-z0-9._-]+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def resolve_home(home: str | os.PathLike[str] | None = None) -> Path:
    """The kun home: ``home`` if given, else ``$KUN_HOME`` if set and non-empty,
    else ``~/.kun``. ``~`` is expanded and the result made absolute, so a later
    ``chdir`` cannot move it. A home that names a file is refused here,
    where the message can say which setting named it."""
    source = "--home"
    if home is None:
        home = os.environ.get("KUN_HOME") or "~/.kun"
        source = "$KUN_HOME" if os.environ.get("KUN_HOME") else "the default"
    root = Path(home).expanduser().absolute()
    if root.exists() and not root.is_dir():
        raise HomeNotADirectory(root, source)
    return root


def validate_thread_id(thread_id: object) -> str:
    """Return ``thread_id`` if it is safe as a directory name, else raise
    :class:`InvalidThreadId` naming the rule it breaks."""
    if not isinstance(thread_id, str):
        raise InvalidThreadId(thread_id, "must be a string")
    if not thread_id:
        raise InvalidThreadId(thread_id, "must not be empty")
    if len(thread_id) > MAX_THREAD_ID_LENGTH:
        raise InvalidThreadId(
            thread_id, f"must be at most {MAX_THREAD_ID_LENGTH} characters, not {len(thread_id)}"
        )
    if _ALLOWED.fullmatch(thread_id) is None:
        if _CONTROL.search(thread_id):
            rule = "must not contain control characters"
        elif "/" in thread_id or "\\" in thread_id:
            rule = "must not contain path separators"
        else:
            rule = "may contain only letters, digits, '.', '_' and '-'"
        raise InvalidThreadId(thread_id, rule)
    if thread_id.startswith("."):
        raise InvalidThreadId(thread_id, "must not start with '.'")
    if ".." in thread_id:
        raise InvalidThreadId(thread_id, "must not contain '..'")
    return thread_id


def threads_root(home: Path) -> Path:
    return home / "threads"


def thread_dir(home: Path, thread_id: str) -> Path:
    """The thread's directory; ``thread_id`` is validated first."""
    return threads_root(home) / validate_thread_id(thread_id)


def log_path(home: Path, thread_id: str) -> Path:
    """``<home>/threads/<thread_id>/events.jsonl``; ``thread_id`` is validated first."""
    return thread_dir(home, thread_id) / LOG_NAME


def lock_path(home: Path, thread_id: str) -> Path:
    return thread_dir(home, thread_id) / LOCK_NAME


def blobs_dir(home: Path, thread_id: str) -> Path:
    """``<home>/threads/<thread_id>/blobs``: the thread's side files."""
    return thread_dir(home, thread_id) / BLOBS_NAME
