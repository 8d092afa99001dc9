"""A thread's projection handed out a turn at a time, for printers.

``kun replay`` prints a transcript or JSON; neither needs the whole
projection at once, only each turn once nothing later can change it. Only a
rewind (or its undo) changes a settled turn (SPEC §4 rule 4: late events are
counted, not applied), so when the bytes of the log hold no rewind tag, a
turn is final as soon as it and the turns before it have settled.

A snapshot beside the log (see :mod:`kun.store.snapshot`) is used when it
verifies and the log after it holds no rewind tag: its settled turns come out
as its frames are decoded, and only the tail is folded. If anything in it
fails to read after some turns came out, the log is folded from the start
and the turns not yet handed out follow, the same as without a snapshot.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Callable, Generator, Iterator
from itertools import islice, takewhile
from pathlib import Path

import msgspec

from kun.contracts import events as ev
from kun.domain.errors import ProjectionError
from kun.domain.reduce import Projector
from kun.domain.state import ThreadState, TurnState
from kun.store.port import ReadMode, ReadReport
from kun.store.reader import last_seq_before, read_log
from kun.store.replay import apply_named
from kun.store.snapshot import SNAPSHOT_NAME, SnapshotReader, SnapshotUnusable, open_snapshot

__all__ = ["may_rewind", "stream_replay"]

STREAM_BATCH = 4096
"""Events folded between two looks for newly settled turns."""
_SCAN_WINDOW = 1 << 24
"""Bytes mapped at a time by :func:`may_rewind` (a multiple of any
``mmap.ALLOCATIONGRANULARITY``)."""


def _quoted(kind: type[ev.EventBase]) -> bytes:
    return b'"%s"' % str(kind.__struct_config__.tag).encode()


_REWOUND = _quoted(ev.ThreadRewound)
_UNDONE = _quoted(ev.ThreadRewindUndone)

Piece = TurnState | ThreadState


def stream_replay(
    path: Path,
    *,
    until: int | None = None,
    mode: ReadMode = "strict",
    report: ReadReport | None = None,
    rewound: Callable[[], bool] | None = None,
    scanned: int | None = None,
) -> Iterator[Piece]:
    """The projection ``replay_log`` returns, in pieces: each turn in start
    order, then the thread, whose turns may lack their items (every turn was
    handed out whole before it). Turns come out as early as they are final
    (see the module's docstring), and a fold that has handed a turn out
    forgets its items, so memory holds the open turns only. Fails as
    ``replay_log`` does, possibly after handing out some turns.

    ``rewound`` answers whether the whole log may hold a rewind tag, asked
    only when the log is folded from its start; by default
    :func:`may_rewind`. A caller passes a faster way to the same answer
    (``kun replay`` starts ``rg`` early): it must say yes whenever
    :func:`may_rewind` would, over at least the log's first ``scanned``
    bytes (its size before that scan began).

    A turn streamed out early is final only for the bytes scanned: a writer
    may append a rewind while this reads. So a streamed fold stops at the
    last event wholly inside the bytes scanned (reading on to the end when
    nothing was appended, so a torn tail is still reported), and the output
    is the thread as it was then."""
    shown = 0
    if until is None:
        reader = open_snapshot(path.with_name(SNAPSHOT_NAME), path, path.parent.name)
        if reader is not None:
            try:
                size = os.stat(path).st_size
                if not may_rewind(path, start=reader.header.offset, tags=(_REWOUND, _UNDONE)):
                    done = yield from _from_snapshot(reader, report, last_seq_before(path, size))
                    if done is None:
                        return
                    shown = done
            finally:
                reader.close()
    for piece in _from_log(path, until, mode, report, rewound, scanned):
        if shown and type(piece) is TurnState:
            shown -= 1
            continue
        yield piece


def may_rewind(path: Path, *, start: int = 0, tags: tuple[bytes, ...] = (_REWOUND,)) -> bool:
    """Whether the log at ``path`` may hold, from byte ``start`` on, an
    event whose kind is one of ``tags`` (quoted): a scan at memory speed
    without decoding (kun never escapes a letter), a window of the file
    mapped at a time so it adds nothing to the peak memory. A tag inside
    some text answers yes, which costs only the streaming."""
    longest = max(len(tag) for tag in tags)
    with open(path, "rb") as file:
        fd = file.fileno()
        size = os.fstat(fd).st_size
        offset = start - start % mmap.ALLOCATIONGRANULARITY
        while offset < size:
            length = min(_SCAN_WINDOW + longest, size - offset)
            with mmap.mmap(fd, length, access=mmap.ACCESS_READ, offset=offset) as view:
                if any(view.find(tag) >= 0 for tag in tags):
                    return True
            offset += _SCAN_WINDOW
    return False


def _from_log(
    path: Path,
    until: int | None,
    mode: ReadMode,
    report: ReadReport | None,
    rewound: Callable[[], bool] | None = None,
    scanned: int | None = None,
) -> Iterator[Piece]:
    projector = Projector()
    if rewound is None:
        scanned, rewound = os.stat(path).st_size, lambda: may_rewind(path)
    shown = 0
    if rewound():
        apply_named(projector, path, read_log(path, until=until, mode=mode, report=report))
    else:
        events = read_log(path, until=until, mode=mode, report=report)
        bound = None if scanned is None else last_seq_before(path, scanned)
        if bound is not None:
            events = takewhile(lambda e: e.seq <= bound, events)
        while True:
            last = projector.last_seq
            apply_named(projector, path, islice(events, STREAM_BATCH))
            shown = yield from _settled(projector, shown)
            if projector.last_seq == last:
                break
    state = projector.snapshot()
    yield from state.turns[shown:]
    yield state


def _settled(projector: Projector, shown: int) -> Generator[Piece, None, int]:
    """Hand out the turns settled since the ``shown`` first, forget their
    items; how many are handed out now."""
    settled = projector.settled_since(shown)
    yield from settled
    shown += len(settled)
    projector.release(shown)
    return shown


def _from_snapshot(
    reader: SnapshotReader, report: ReadReport | None, bound: int | None
) -> Generator[Piece, None, int | None]:
    """Every piece, from the snapshot and the tail after it: ``None`` once
    all are out, or how many turns are out when something failed to read."""
    shown = 0
    kept: list[TurnState] = []
    try:
        for turn in reader.turns():
            if turn.settled and len(kept) == shown:
                yield turn
                shown += 1
                turn = msgspec.structs.replace(turn, items=())
            kept.append(turn)
        projector = Projector(msgspec.structs.replace(reader.shell, turns=tuple(kept)))
        del kept
        tail = reader.tail()
        if bound is not None:
            tail = takewhile(lambda e: e.seq <= bound, tail)
        while True:
            last = projector.last_seq
            projector.apply_all(islice(tail, STREAM_BATCH))
            shown = yield from _settled(projector, shown)
            if projector.last_seq == last:
                break
    except (SnapshotUnusable, ProjectionError, OSError):
        return shown
    state = projector.snapshot()
    yield from state.turns[shown:]
    if report is not None:
        report.last_seq = state.last_seq
    yield state
    return None
