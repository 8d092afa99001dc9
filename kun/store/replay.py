"""Replaying one log file into a projection, every failure named by line.

The reader names the line of a bad line, a gap or a repeated seq. The fold
refuses an event that breaks the log's structure (an item for a turn that
never started, another thread's event, a seq that is not after the last) but
knows only its seq: here that ``ProjectionError`` becomes the ``CorruptLog``
of the line holding the event, so however a log is damaged, the user gets
one error naming file and line.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import msgspec

from kun.contracts.events import Event
from kun.domain.errors import ProjectionError
from kun.domain.reduce import Projector
from kun.domain.state import ThreadState
from kun.store.errors import CorruptLog
from kun.store.port import ReadMode, ReadReport
from kun.store.reader import read_log

__all__ = ["apply_named", "line_of_event", "replay_log", "replay_since"]


class _Seq(msgspec.Struct):
    seq: int = 0


_SEQ = msgspec.json.Decoder(_Seq)


def replay_log(
    path: Path,
    *,
    until: int | None = None,
    mode: ReadMode = "strict",
    report: ReadReport | None = None,
) -> ThreadState:
    """The projection of the log at ``path`` (up to ``until``), read in
    ``mode``. Raises ``CorruptLog`` (naming the line) for anything the reader
    or the fold refuses."""
    projector = Projector()
    apply_named(projector, path, read_log(path, until=until, mode=mode, report=report))
    return projector.snapshot()


def replay_since(
    path: Path,
    since: int,
    *,
    until: int | None = None,
    mode: ReadMode = "strict",
    report: ReadReport | None = None,
) -> tuple[ThreadState, ThreadState]:
    """The projection just before seq ``since`` and the one at the end (or
    ``until``), from one fold: what changed between them is what happened
    from ``since`` on. Fails as :func:`replay_log` does."""
    projector = Projector()
    first = since - 1 if until is None else min(since - 1, until)
    apply_named(projector, path, read_log(path, until=max(first, 0), mode=mode, report=report))
    before = projector.snapshot()
    rest = read_log(path, after=projector.last_seq, until=until, mode=mode, report=report)
    apply_named(projector, path, rest)
    return before, projector.snapshot()


def apply_named(projector: Projector, path: Path, events: Iterable[Event]) -> None:
    """``projector.apply_all(events)``, a refused event raised as the
    ``CorruptLog`` naming its line of the log at ``path``."""
    try:
        projector.apply_all(events)
    except ProjectionError as exc:
        last = projector.last_seq
        line = line_of_event(path, exc.seq, after_seq=last)
        raise CorruptLog(path, line, last, f"event seq {exc.seq}: {exc.reason}") from exc


def line_of_event(path: Path, seq: int, *, after_seq: int) -> int:
    """The 1-based line of the event with ``seq`` that follows the line of
    ``after_seq`` (the start of the file when 0): the event a fold refused
    after applying everything up to ``after_seq``. Falls back to the first
    line after that one holding anything. A one-off scan, for errors only."""
    passed = after_seq == 0
    fallback = 0
    with open(path, "rb") as file:
        for number, line in enumerate(file, 1):
            found = _seq_of(line)
            if found is None:
                continue
            if passed:
                if found == seq:
                    return number
                fallback = fallback or number
            elif found == after_seq:
                passed = True
    return fallback or 1


def _seq_of(line: bytes) -> int | None:
    if not line.strip():
        return None
    try:
        return _SEQ.decode(line).seq
    except (msgspec.DecodeError, RecursionError):
        return -1
