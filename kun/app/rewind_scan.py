"""Whether a log may hold a rewind, asked of ripgrep in a process of its own.

``kun replay`` prints a turn only once nothing later in the log can hide it,
so before the first turn of a log without a usable snapshot it must know
whether the log holds a ``thread_rewound`` tag anywhere
(:func:`kun.store.streaming.may_rewind`). In Python that scan is
``bytes.find`` over the whole file: about 0.12 s of CPU for a 1M-event,
408 MB log, since a 16-byte needle of common letters lets the search skip
only a few bytes at a time. ``rg`` (from the ``ripgrep`` wheel kun already
depends on for its ``grep`` tool) finds a fixed string with SIMD in about a
third of that CPU, and runs on another core while this process imports the
fold and probes the snapshot: the scan is started as soon as the log is
known and its answer awaited only when the first turn needs it.

The answer is the same bytes question: a fixed string (``-F``), every byte
searched as text (``-a``, no binary detection), no encoding sniffing
(``-E none``), no user config (``--no-config``). Anything else than a clean
"found" or "not found" (no ``rg``, an error, a signal) falls back to the
scan in this process, so the answer never depends on ``rg`` being there.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

__all__ = ["REWIND_TAG", "SNAPSHOT_NAME", "RewindScan"]

REWIND_TAG = '"thread_rewound"'
"""``ThreadRewound``'s kind, quoted, as :mod:`kun.store.streaming` scans
for it (a test holds the two equal); spelled out so the scan starts before
the event contracts are imported."""
SNAPSHOT_NAME = "snapshot.msgpack"
""":data:`kun.store.snapshot.SNAPSHOT_NAME` (a test holds them equal): with
a snapshot beside the log, only its tail is scanned, so ``rg`` is started
only if the snapshot turns out unusable."""


def _rg() -> str | None:
    beside = Path(sys.executable).parent / "rg"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("rg")


class RewindScan:
    """A scan of ``path`` for :data:`REWIND_TAG`, started at construction
    unless a snapshot lies beside the log; :meth:`may_rewind` waits for it.
    Use as a context manager so a replay that stops early (an error, a
    closed pipe) does not leave ``rg`` running."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.size = path.stat().st_size
        """The log's size before any scan began: every answer covers at
        least these bytes (``stream_replay``'s ``scanned``)."""
        self._child: subprocess.Popen[bytes] | None = None
        if not path.with_name(SNAPSHOT_NAME).exists():
            self._start()

    def _start(self) -> None:
        path = self.path
        rg = _rg()
        if rg is None:
            return
        argv = [
            rg,
            "--no-config",
            "-q",
            "-a",
            "-F",
            "-E",
            "none",
            "-e",
            REWIND_TAG,
            "--",
            str(path),
        ]
        try:
            self._child = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )
        except OSError:
            self._child = None

    def may_rewind(self) -> bool:
        """Whether the log may hold a rewind: ``rg``'s answer, or this
        process's own scan when ``rg`` gave none."""
        if self._child is None:
            self._start()
        child, self._child = self._child, None
        if child is not None:
            code = child.wait()
            if code in (0, 1):
                return code == 0
        from kun.store.streaming import may_rewind

        return may_rewind(self.path)

    def close(self) -> None:
        child, self._child = self._child, None
        if child is not None:
            child.kill()
            child.wait()

    def __enter__(self) -> RewindScan:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
