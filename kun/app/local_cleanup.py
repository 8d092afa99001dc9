"""The in-process adapter's clean-up answers: the trash as a page, what a
gc did (:mod:`kun.app.trash`, :mod:`kun.app.cleanup`). Paths are relative
to the home, which a client of ``kun serve`` is never shown. Blocking; the
adapter runs them off the event loop, once it has refused a busy thread."""

from __future__ import annotations

from datetime import UTC
from pathlib import Path

from kun.app import cleanup
from kun.app.answers import Collected, TrashEntry, TrashPage
from kun.app.trash import trashed

__all__ = ["collected", "confirmed", "trash_page"]


def trash_page(home: Path) -> TrashPage:
    """The trash, most recently removed first; ``entry``: the name
    ``restore`` takes, as ``kun trash`` lists it."""
    return TrashPage(
        entries=[
            TrashEntry(
                entry=t.path.name,
                thread_id=t.thread_id,
                removed_at=int(t.removed_at.astimezone(UTC).timestamp() * 1000),
            )
            for t in trashed(home)
        ]
    )


def collected(home: Path, thread_id: str) -> Collected:
    """A gc of the thread (:func:`kun.app.cleanup.collect`)."""
    report = cleanup.collect(home, thread_id)
    generation = report.generation
    return Collected(
        thread_id=thread_id,
        generation=None if generation is None else generation.relative_to(home).as_posix(),
        turns=report.turns,
        events=report.events,
        side_files=report.side_files,
        bytes_saved=report.bytes_saved,
    )


def confirmed(home: Path, thread_id: str) -> Collected:
    """The old generations an earlier gc kept, removed; ``freed``: bytes."""
    return Collected(thread_id=thread_id, generation=None, freed=cleanup.confirm(home, thread_id))
