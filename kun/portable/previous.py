"""What a thread already in the home holds of an earlier import, and how a
new import of the same source compares with it.

A thread that was imported and then continued in kun is the imported
events, the ``thread_imported`` line its import appended, then kun's own
turns. Importing the source again compares only the part before that line
(the *imported prefix*, up to the latest ``thread_imported``) with what the
source imports now, so turns run in kun since never make an unchanged source
look changed, and a changed source is described precisely: how many records
(a session) or events (a bundle) it gained, whether it was rewritten, and
how many turns the kun thread has of its own that a replace would move to
the trash.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO

from kun.contracts.events import ThreadImported, TurnStarted
from kun.store.codec import decode_line
from kun.store.reader import read_log

__all__ = [
    "Previous",
    "SourceLines",
    "previous_import",
    "same_prefix",
    "starts_with",
    "turns_phrase",
]

_MARKER = b'{"kind":"thread_imported"'
_CHUNK = 1 << 20


@dataclass(frozen=True)
class SourceLines:
    """The whole lines of a session file: how many, and their SHA-256."""

    count: int
    sha256: str

    @classmethod
    def of(cls, data: bytes) -> SourceLines:
        end = data.rfind(b"\n") + 1
        return cls(data.count(b"\n", 0, end), hashlib.sha256(data[:end]).hexdigest())

    def grown_by(self, data: bytes) -> int | None:
        """Records ``data`` holds after these lines, when it starts with
        them unchanged; ``None`` when it does not (the file was rewritten)."""
        end = 0
        for _ in range(self.count):
            end = data.find(b"\n", end) + 1
            if end == 0:
                return None
        if hashlib.sha256(data[:end]).hexdigest() != self.sha256:
            return None
        return sum(1 for line in data[end:].split(b"\n") if line.strip())


@dataclass(frozen=True)
class Previous:
    """The latest ``thread_imported`` of a thread's log, the bytes before
    its line, and the turns started after it (run in kun since)."""

    marker: ThreadImported
    prefix: int
    turns_since: int

    @property
    def when(self) -> str:
        return datetime.fromtimestamp(self.marker.at / 1000, UTC).strftime("%Y-%m-%d %H:%M UTC")

    def source_lines(self) -> SourceLines | None:
        m = self.marker
        if m.source_lines is None or m.source_sha256 is None:
            return None
        return SourceLines(m.source_lines, m.source_sha256)


def previous_import(log: Path) -> Previous | None:
    """The latest import recorded in ``log``; ``None`` when there is no log
    or it holds no ``thread_imported`` line."""
    try:
        file = open(log, "rb")  # closed below: read in chunks
    except FileNotFoundError:
        return None
    with file:
        start = _last_marker(file)
        if start is None:
            return None
        file.seek(start)
        line = file.readline().rstrip(b"\n")
    event = decode_line(line, log.parent.name)
    if not isinstance(event, ThreadImported):
        return None
    since = read_log(log, after=event.seq, mode="tolerant")
    turns = sum(1 for e in since if isinstance(e, TurnStarted))
    return Previous(event, start, turns)


def _last_marker(file: BinaryIO) -> int | None:
    """Offset of the last line starting with ``thread_imported``'s kind."""
    found: int | None = None
    offset = 0
    carry = b"\n"
    while chunk := file.read(_CHUNK):
        data = carry + chunk
        at = data.rfind(b"\n" + _MARKER)
        if at >= 0:
            found = offset - len(carry) + at + 1
        carry = data[-len(_MARKER) :]
        offset += len(chunk)
    return found


def same_prefix(first: Path, first_size: int, second: Path, second_size: int) -> bool:
    """Whether the first ``first_size`` bytes of ``first`` are the first
    ``second_size`` bytes of ``second`` (the sizes equal)."""
    return first_size == second_size and starts_with(second, first, first_size)


def starts_with(longer: Path, shorter: Path, size: int) -> bool:
    """Whether ``longer`` begins with the first ``size`` bytes of ``shorter``."""
    if os.path.getsize(longer) < size:
        return False
    with open(longer, "rb") as a, open(shorter, "rb") as b:
        while size > 0:
            n = min(size, _CHUNK)
            if a.read(n) != b.read(n):
                return False
            size -= n
    return True


def turns_phrase(turns: int) -> str:
    if turns == 0:
        return "no turns of its own since"
    return f"{turns} turn{'s' if turns != 1 else ''} run in kun since"
