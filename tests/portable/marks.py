"""What an imported thread holds besides its bundle: the ``thread_imported``
line ``kun import`` ends it with (its time is when it was imported)."""

from __future__ import annotations

from pathlib import Path

from kun.contracts.events import ThreadImported
from kun.domain.reduce import Projector
from kun.domain.state import ThreadState
from kun.store.reader import read_log

__all__ = ["unmarked", "unmarked_state"]


def unmarked(log: Path) -> bytes:
    """The imported ``log``'s bytes without its last line, which must be
    ``thread_imported``."""
    lines = log.read_bytes().splitlines(keepends=True)
    assert lines[-1].startswith(b'{"kind":"thread_imported"'), lines[-1]
    return b"".join(lines[:-1])


def unmarked_state(log: Path) -> ThreadState:
    """The imported ``log``'s projection as it was before it was imported
    (once, or again after an export from here: the marks it ends with are
    left out)."""
    events = list(read_log(log))
    assert isinstance(events[-1], ThreadImported)
    while isinstance(events[-1], ThreadImported):
        events.pop()
    projector = Projector()
    projector.apply_all(events)
    return projector.snapshot()
