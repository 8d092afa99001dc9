"""The end of a log, read backwards: what the writer needs on open.

A writer must learn the last seq and whether the log ends in a torn line
without replaying it, so :func:`scan_tail` reads backwards from the end only
as far as the last good line (usually one small ``pread``). Its verdict is the
reader's: a last line with no newline, or a newline-terminated last line that
is not JSON, is torn unless it holds an event; any other line that is not an
event is corruption.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NoReturn

import msgspec

from kun.store.codec import NotJson, UnknownKind, WrongShape, decode_line, preview
from kun.store.errors import CorruptLog
from kun.store.port import TornTail
from kun.store.reader import count_lines, read_log
from kun.store.torn import untorn_reason

__all__ = ["Tail", "scan_tail"]

_BACK_STEP = 1 << 16


class Tail(msgspec.Struct, frozen=True, kw_only=True):
    """``last_seq`` of the last good line, which ends at byte ``good_end``;
    ``torn`` describes the bytes after it, if any."""

    last_seq: int
    good_end: int
    torn: TornTail | None = None


def scan_tail(fd: int, path: Path) -> Tail:
    """Scan the log open as ``fd`` (readable) from its end.

    Raises ``CorruptLog`` if the last line before any torn tail is not an
    event, or if what looks torn holds an event (see :mod:`kun.store.torn`):
    it names the first bad line of the file, as a reader would.
    """
    size = os.fstat(fd).st_size
    if size == 0:
        return Tail(last_seq=0, good_end=0)
    end = good_end = _rfind_newline(fd, size) + 1
    torn = None
    if end < size:
        why = untorn_reason(os.pread(fd, size - end, end), terminated=False)
        if why is not None:
            _raise_corrupt(fd, path, end, f"last line has no trailing newline; {why}")
        torn = (end, "last line has no trailing newline")
    while end > 0:
        start = _rfind_newline(fd, end - 1) + 1
        line = os.pread(fd, end - 1 - start, start)
        if not line.strip(b" \t\r"):
            end = start
            continue
        try:
            seq = decode_line(line).seq
        except UnknownKind as exc:
            seq = exc.seq
        except NotJson as exc:
            if end != size:
                _raise_corrupt(fd, path, start, exc.reason)
            why = untorn_reason(line, terminated=True)
            if why is not None:
                _raise_corrupt(fd, path, start, f"{exc.reason}; {why}")
            torn = (start, f"last line is not valid JSON: {exc.reason}")
            end = good_end = start
            continue
        except WrongShape as exc:
            _raise_corrupt(fd, path, start, exc.reason)
        if seq < 1:
            _raise_corrupt(fd, path, start, f"seq {seq}: a log's seqs start at 1")
        return Tail(last_seq=seq, good_end=good_end, torn=_torn(fd, torn, size))
    return Tail(last_seq=0, good_end=good_end, torn=_torn(fd, torn, size))


def _torn(fd: int, torn: tuple[int, str] | None, size: int) -> TornTail | None:
    if torn is None:
        return None
    offset, reason = torn
    return TornTail(
        line=count_lines(fd, offset) + 1,
        offset=offset,
        size=size - offset,
        reason=reason,
        preview=preview(os.pread(fd, 64, offset)),
    )


def _rfind_newline(fd: int, end: int) -> int:
    """Offset of the last ``\\n`` before byte ``end``, or -1."""
    position = end
    while position > 0:
        start = max(0, position - _BACK_STEP)
        found = os.pread(fd, position - start, start).rfind(b"\n")
        if found >= 0:
            return start + found
        position = start
    return -1


def _raise_corrupt(fd: int, path: Path, offset: int, reason: str) -> NoReturn:
    """Raise the reader's ``CorruptLog`` for the first bad line of the file;
    ours, for the line at ``offset``, only if the reader finds none."""
    for _ in read_log(path, mode="tolerant"):
        pass
    raise CorruptLog(path, count_lines(fd, offset) + 1, 0, reason)
