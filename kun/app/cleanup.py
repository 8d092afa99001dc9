"""``kun gc``: explicit clean-up of one thread, never automatic.

A rewind hides turns and keeps them (SPEC: nothing is deleted), and a crash
can leave a side file no event names. :func:`collect` writes a new
generation of the log without the hidden turns (their events and the rewind
events that hid them, or were undone) and moves the side files nothing in it
names out of ``blobs/``. What was spent stays: the hidden turns' usage
events are kept outside any turn, and a goal keeps its accounting. The old
generation is kept beside it, in ``generations/<n>/`` (the old
``events.jsonl`` and the side files moved out), until :func:`confirm`
removes it: a mistaken gc is undone by moving the old log back.

Seqs are renumbered 1, 2, 3, ...: readers refuse a gap (:mod:`kun.store.reader`).
Only the rewind events point at seqs of their own thread, and they are the
ones dropped; ``thread_forked.source_seq`` names the source thread's seq and
stays as it was. The new log is written to a temp file, fsynced, replayed and
compared with the old one's visible turns (the same turns, items, usage and
settings; only their seqs differ) before it replaces the old log with one
atomic ``os.replace``. A crash before that leaves the old log in place and
valid; after it, the new one. The snapshot (a cache of the old log) is
removed first, and the thread index sees a new file and rebuilds its entry.

The thread's writer lock is held throughout, so a live writer (``kun
serve``, a session, a running turn) makes gc refuse instead of racing it.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import msgspec

from kun.contracts import events as ev
from kun.domain.reduce import Projector
from kun.domain.state import ThreadState, TurnState
from kun.errors import RuntimeFailure, UserMistake
from kun.runtime.sidefiles import side_file_refs
from kun.store.codec import encode_line
from kun.store.lock import lock_thread
from kun.store.paths import BLOBS_NAME, LOG_NAME, lock_path, thread_dir
from kun.store.reader import read_log
from kun.store.snapshot import SNAPSHOT_NAME

__all__ = [
    "GENERATIONS",
    "GcReport",
    "GcUnsafe",
    "collect",
    "confirm",
    "kept_generations",
]

GENERATIONS = "generations"
TEMP_NAME = LOG_NAME + ".gc-tmp"

Fault = Callable[[str], None]
"""Called with a step's name after each step: tests inject a crash there."""


class GcUnsafe(RuntimeFailure):
    """The new generation would not replay to the same visible turns."""


@dataclass(frozen=True)
class GcReport:
    """What a gc dropped. ``generation``: where the old generation is kept
    (``None``: nothing to collect, nothing written). ``bytes_saved`` is what
    removing the old generation frees."""

    thread_id: str
    generation: Path | None
    turns: int = 0
    events: int = 0
    side_files: int = 0
    bytes_saved: int = 0


def collect(home: Path, thread_id: str, *, fault: Fault | None = None) -> GcReport:
    """Write a new generation of the thread's log without hidden turns and
    unreferenced side files, keeping the old one in ``generations/<n>``."""
    directory = _existing(home, thread_id)
    fd = lock_thread(thread_id, lock_path(home, thread_id))
    try:
        return _collect(directory, thread_id, fault or _no_fault)
    finally:
        os.close(fd)


def confirm(home: Path, thread_id: str) -> int:
    """Remove the kept old generations; returns the bytes freed (0: none)."""
    directory = _existing(home, thread_id)
    fd = lock_thread(thread_id, lock_path(home, thread_id))
    try:
        kept = directory / GENERATIONS
        if not kept.exists():
            return 0
        freed = _size(kept)
        shutil.rmtree(kept)
        _fsync_dir(directory)
        return freed
    finally:
        os.close(fd)


def kept_generations(home: Path, thread_id: str) -> list[Path]:
    """The old generations kept until ``kun gc --confirm``, oldest first."""
    kept = thread_dir(home, thread_id) / GENERATIONS
    if not kept.is_dir():
        return []
    return sorted((p for p in kept.iterdir() if p.name.isdecimal()), key=lambda p: int(p.name))


def _no_fault(step: str) -> None:
    return None


def _existing(home: Path, thread_id: str) -> Path:
    directory = thread_dir(home, thread_id)
    if not (directory / LOG_NAME).is_file():
        raise UserMistake(f"no thread {thread_id!r} under {home}")
    return directory


def _collect(directory: Path, thread_id: str, fault: Fault) -> GcReport:
    log = directory / LOG_NAME
    events = list(read_log(log))
    before = _project(events)
    hidden = {t.turn_id for t in before.turns if t.hidden_by is not None}
    kept = _kept(events, before, hidden)
    dropped = sum(1 for e in events if _dropped(e, hidden) and not _rehomed(e, hidden))
    referenced = {ref.sha256 for e in kept for ref in side_file_refs(e)}
    blobs = directory / BLOBS_NAME
    loose = sorted(p for p in blobs.iterdir() if p.name not in referenced) if blobs.is_dir() else []
    if not dropped and not loose:
        return GcReport(thread_id, None)
    generation = _next_generation(directory)
    saved = 0
    if dropped:
        saved = _rewrite(directory, events, kept, before, generation, fault)
    generation.mkdir(parents=True, exist_ok=True)
    if loose:
        moved = generation / BLOBS_NAME
        moved.mkdir(exist_ok=True)
        for path in loose:
            saved += path.stat().st_size
            os.replace(path, moved / path.name)
            fault("side_file_moved")
        _fsync_dir(moved)
        _fsync_dir(blobs)
    return GcReport(
        thread_id,
        generation,
        turns=len(hidden),
        events=dropped,
        side_files=len(loose),
        bytes_saved=saved,
    )


def _rewrite(
    directory: Path,
    events: list[ev.Event],
    kept: list[ev.Event],
    before: ThreadState,
    generation: Path,
    fault: Fault,
) -> int:
    """Write, check and switch to the new log; returns the bytes it saves.
    The old log is hard-linked into ``generation`` before the switch, so it
    is never without a name."""
    log = directory / LOG_NAME
    temp = directory / TEMP_NAME
    renumbered = [msgspec.structs.replace(e, seq=i) for i, e in enumerate(kept, 1)]
    with open(temp, "wb") as file:
        file.writelines(encode_line(e) for e in renumbered)
        file.flush()
        os.fsync(file.fileno())
    fault("written")
    old_seq = {e.seq: old.seq for e, old in zip(renumbered, kept, strict=True)}
    try:
        _check(before, _project(read_log(temp)), old_seq)
    except BaseException:
        temp.unlink()
        raise
    generation.mkdir(parents=True)
    os.link(log, generation / LOG_NAME)
    _fsync_dir(generation)
    _fsync_dir(generation.parent)
    fault("linked")
    (directory / SNAPSHOT_NAME).unlink(missing_ok=True)
    os.replace(temp, log)
    _fsync_dir(directory)
    fault("replaced")
    return (generation / LOG_NAME).stat().st_size - log.stat().st_size


def _kept(events: list[ev.Event], before: ThreadState, hidden: set[str]) -> list[ev.Event]:
    """The events of the new generation (seqs not yet renumbered). A hidden
    turn's model calls were paid for: their usage events stay, outside any
    turn, so the thread's totals do not shrink; and a goal that hidden turns
    were charged to keeps its accounting, restated by one ``thread_updated``
    at the end when dropping them changed it."""
    kept: list[ev.Event] = []
    for event in events:
        if not _dropped(event, hidden):
            kept.append(event)
        elif _rehomed(event, hidden):
            kept.append(msgspec.structs.replace(event, turn_id=None))
    goal = before.settings.goal
    if kept and _project(kept).settings.goal != goal:
        last = kept[-1]
        kept.append(ev.ThreadUpdated(seq=last.seq, at=last.at, thread_id=last.thread_id, goal=goal))
    return kept


def _rehomed(event: ev.Event, hidden: set[str]) -> bool:
    return isinstance(event, ev.Usage) and event.turn_id in hidden


def _dropped(event: ev.Event, hidden: set[str]) -> bool:
    if isinstance(event, ev.ThreadRewound | ev.ThreadRewindUndone | ev.FilesRestoreStarted):
        return True
    return event.turn_id is not None and event.turn_id in hidden


def _project(events: Iterable[ev.Event]) -> ThreadState:
    projector = Projector()
    projector.apply_all(events)
    return projector.snapshot()


def _check(before: ThreadState, after: ThreadState, old_seq: dict[int, int]) -> None:
    """Refuse a new generation whose visible turns or settings differ from
    the old one's (seqs compared through ``old_seq``)."""
    moved = tuple(_at(t, old_seq.get(t.started_seq, -1)) for t in after.visible_turns)
    if moved != before.visible_turns:
        raise GcUnsafe(f"gc of {before.thread_id} would change its visible turns; nothing changed")
    if after.settings != before.settings or after.usage != before.usage:
        raise GcUnsafe(
            f"gc of {before.thread_id} would change its settings or usage; nothing changed"
        )


def _at(turn: TurnState, seq: int) -> TurnState:
    return msgspec.structs.replace(turn, started_seq=seq)


def _next_generation(directory: Path) -> Path:
    kept = directory / GENERATIONS
    taken = [int(p.name) for p in kept.iterdir() if p.name.isdecimal()] if kept.is_dir() else []
    return kept / str(max(taken, default=0) + 1)


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
