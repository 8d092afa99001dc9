"""Replaying one log file into a projection, every failure named by line.

The reader names the line of a bad line, a gap or a repeated seq. The fold
refuses an event that breaks the log's structure (an item for a turn that
never started, another thread's event, a seq that is not after the last) but
knows only its seq: here that ``ProjectionError`` becomes the ``CorruptLog``
of the line holding the event, so however a log is damaged, the user gets
one error naming file and line.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Iterable, Iterator
from itertools import islice
from pathlib import Path

import msgspec

from kun.contracts import events as ev
from kun.contracts.events import Event
from kun.domain.errors import ProjectionError
from kun.domain.reduce import Projector
from kun.domain.state import ThreadState, TurnState
from kun.store.errors import CorruptLog
from kun.store.port import ReadMode, ReadReport
from kun.store.reader import read_log

__all__ = ["line_of_event", "may_rewind", "replay_log", "replay_since", "stream_replay"]

STREAM_BATCH = 4096
"""Events folded between two looks for newly settled turns."""
_REWOUND = b'"%s"' % str(ev.ThreadRewound.__struct_config__.tag).encode()
_SCAN_WINDOW = 1 << 24
"""Bytes mapped at a time by :func:`may_rewind` (a multiple of any
``mmap.ALLOCATIONGRANULARITY``)."""


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
    _apply(projector, path, read_log(path, until=until, mode=mode, report=report))
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
    _apply(projector, path, read_log(path, until=max(first, 0), mode=mode, report=report))
    before = projector.snapshot()
    rest = read_log(path, after=projector.last_seq, until=until, mode=mode, report=report)
    _apply(projector, path, rest)
    return before, projector.snapshot()


def stream_replay(
    path: Path,
    *,
    until: int | None = None,
    mode: ReadMode = "strict",
    report: ReadReport | None = None,
) -> Iterator[TurnState | ThreadState]:
    """The projection :func:`replay_log` returns, in pieces: each turn in
    start order, then the thread, whose turns may lack their items (every
    turn was handed out whole before it).

    Only a rewind changes a settled turn, so when the log holds none (see
    :func:`may_rewind`) a turn is handed out as soon as it and every turn
    before it have settled, and its items are then released: a printer
    shows a long log's first turns at once, and memory holds the open turns
    only. A log that may hold a rewind is folded whole first. Fails as
    :func:`replay_log` does, possibly after handing out some turns."""
    projector = Projector()
    events = read_log(path, until=until, mode=mode, report=report)
    shown = 0
    if may_rewind(path):
        _apply(projector, path, events)
    else:
        while True:
            last = projector.last_seq
            _apply(projector, path, islice(events, STREAM_BATCH))
            settled = projector.settled_since(shown)
            yield from settled
            shown += len(settled)
            projector.release(shown)
            if projector.last_seq == last:
                break
    state = projector.snapshot()
    yield from state.turns[shown:]
    yield state


def may_rewind(path: Path) -> bool:
    """Whether the log at ``path`` may hold a ``thread_rewound`` event: its
    kind's tag, quoted, occurs in the file's bytes (kun never escapes a
    letter). A scan at memory speed without decoding, through a window of
    the file mapped at a time so it adds nothing to the peak memory; the
    tag inside some text answers yes, which costs only the streaming."""
    with open(path, "rb") as file:
        fd = file.fileno()
        size = os.fstat(fd).st_size
        offset = 0
        while offset < size:
            length = min(_SCAN_WINDOW + len(_REWOUND), size - offset)
            with mmap.mmap(fd, length, access=mmap.ACCESS_READ, offset=offset) as view:
                if view.find(_REWOUND) >= 0:
                    return True
            offset += _SCAN_WINDOW
    return False


def _apply(projector: Projector, path: Path, events: Iterable[Event]) -> None:
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
