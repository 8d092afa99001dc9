"""A thread's writer lock: ``writer.lock`` beside its log, holding the
holder's pid and, when the process said what it is (:func:`set_holder`), its
kind and where to reach it (``kun serve`` and its URL), so the one refused
can say who holds the thread and how to go through it instead.

The lock is an exclusive ``flock`` on the open file: it belongs to that open
file, so another process *and* another store instance in this process are
refused, and the kernel drops it when the process dies, so a crash never
leaves a stale lock. The pid in the file is only for the message of the one
refused: it is written over the old one and the file cut after it, so the
file is never empty, and the refused side reads the first line only and waits
briefly for a live holder's pid (between the winner's ``flock`` and its write
the file is empty or names the previous, dead holder).
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

from kun.store.errors import ThreadLocked

__all__ = ["HOLDER_WAIT_SECONDS", "lock_thread", "set_holder"]

HOLDER_WAIT_SECONDS = 0.2
"""How long a refused writer waits for the holder to write its pid."""

_holder: tuple[str, str] = ("", "")


def set_holder(kind: str, url: str = "") -> None:
    """Say what this process is (``kun serve``) and where it answers, in
    every lock it takes from now on. One line each: newlines are dropped."""
    global _holder
    _holder = (" ".join(kind.split()), " ".join(url.split()))


def lock_thread(thread_id: str, path: Path) -> int:
    """Open ``path`` and take the writer lock on it; return the fd.
    ``ThreadLocked`` (naming the holder's pid when it can be known) if
    another open file holds it."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        try:
            holder = _holder_pid(fd)
            kind, url = _read_label(fd) if holder is not None else ("", "")
        finally:
            os.close(fd)
        raise ThreadLocked(thread_id, path, holder, kind=kind, url=url) from None
    except BaseException:
        os.close(fd)
        raise
    try:
        kind, url = _holder
        record = f"{os.getpid()}\n{kind}\n{url}\n".encode() if kind else f"{os.getpid()}\n".encode()
        os.pwrite(fd, record, 0)
        os.ftruncate(fd, len(record))
    except BaseException:
        os.close(fd)
        raise
    return fd


def _holder_pid(fd: int) -> int | None:
    deadline = time.monotonic() + HOLDER_WAIT_SECONDS
    while True:
        pid = _read_pid(fd)
        if pid is not None and _alive(pid):
            return pid
        if time.monotonic() >= deadline:
            return pid
        time.sleep(0.002)


def _read_pid(fd: int) -> int | None:
    try:
        first = os.pread(fd, 32, 0).split(b"\n", 1)[0]
        pid = int(first.strip())
    except (OSError, ValueError):
        return None
    return pid if pid > 0 else None


def _read_label(fd: int) -> tuple[str, str]:
    """The holder's kind and URL (lines 2 and 3), empty when it named none."""
    try:
        lines = os.pread(fd, 4096, 0).decode("utf-8", "replace").split("\n")
    except OSError:
        return "", ""
    kind = lines[1].strip() if len(lines) > 2 else ""
    url = lines[2].strip() if len(lines) > 3 else ""
    return kind, url


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
