"""Where the JSON lines go: a file a day under the home, one named file, or
stderr.

Each line is one unbuffered ``write`` to a file opened for appending, so a
``kun serve`` and a ``kun run`` logging to the same day's file interleave
whole lines. The log directory is private (0700) and so are the files
(0600): with ``--log-content`` they hold prompts. A write is synchronous,
~10 us: one per model call and tool call, never per streamed token.
"""

from __future__ import annotations

import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO, Protocol

import msgspec

__all__ = ["DailyFiles", "FileSink", "Sink", "StderrSink", "open_sink"]

_encode = msgspec.json.Encoder().encode


class Sink(Protocol):
    def write(self, record: dict[str, Any]) -> None: ...

    def close(self) -> None: ...


def _open(path: Path) -> BinaryIO:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    return os.fdopen(fd, "ab", buffering=0)


class FileSink:
    """Appends to one named file."""

    def __init__(self, path: Path) -> None:
        self._file = _open(path)

    def write(self, record: dict[str, Any]) -> None:
        self._file.write(_encode(record) + b"\n")

    def close(self) -> None:
        self._file.close()


class DailyFiles:
    """``<directory>/kun-YYYYMMDD.jsonl``, the UTC day of each record's
    ``ts``: the first record of a new day opens the new day's file."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._day = ""
        self._file: BinaryIO | None = None

    def path(self, day: str) -> Path:
        return self.directory / f"kun-{day}.jsonl"

    def write(self, record: dict[str, Any]) -> None:
        day = str(record["ts"])[:10].replace("-", "")
        if day != self._day or self._file is None:
            self.close()
            self._file = _open(self.path(day))
            self._day = day
        self._file.write(_encode(record) + b"\n")

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


class StderrSink:
    def write(self, record: dict[str, Any]) -> None:
        sys.stderr.write(_encode(record).decode() + "\n")
        sys.stderr.flush()

    def close(self) -> None:
        return None


def open_sink(log: str, home: Path) -> Sink | None:
    """The sink of a ``log`` setting (:class:`kun.observe.settings.ObserveSettings`)."""
    if log == "off":
        return None
    if log == "stderr":
        return StderrSink()
    if log == "file":
        return DailyFiles(home / "logs")
    return FileSink(Path(log).expanduser())


def now_iso() -> str:
    """A record's ``ts``: UTC, milliseconds."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
