"""Errors of the pure domain layer.

::

    RuntimeFailure (kun.errors)
    └── ProjectionError   an event cannot apply to the state it meets: seq not
                          increasing, another thread's event, an item for a turn
                          that never started, a rewind to an unknown turn.
"""

from __future__ import annotations

from kun.errors import RuntimeFailure


class ProjectionError(RuntimeFailure):
    """An event that breaks the log's structure. ``seq`` names the event."""

    def __init__(self, seq: int, reason: str) -> None:
        super().__init__(f"event seq={seq}: {reason}")
        self.seq = seq
        self.reason = reason
