"""The refusals of the in-process adapter (:mod:`kun.app.local`) that no
lower layer raises; ``kun serve`` answers each with its own status and
code (:mod:`kun.server.errors`)."""

from __future__ import annotations

import os
from pathlib import Path

from kun.errors import RuntimeFailure, UserMistake
from kun.store.errors import ThreadLocked

__all__ = [
    "GoalRefused",
    "InvalidCursor",
    "InvalidWorkspace",
    "NoGoal",
    "TurnRunning",
    "TurnUnreachable",
]


class InvalidWorkspace(UserMistake):
    """A ``workspace`` that is not a folder on this machine."""


class NoGoal(UserMistake):
    """A change to the goal of a thread that has none."""


class GoalRefused(UserMistake):
    """A goal move its status does not allow (pausing a paused goal)."""


class TurnRunning(ThreadLocked):
    """A thread a turn runs in here, which a clean-up (``rm``, ``gc``)
    must not move under it."""

    def __init__(self, thread_id: str, turn_id: str, lock: Path) -> None:
        RuntimeFailure.__init__(
            self,
            f"thread {thread_id!r} has a turn running ({turn_id}); "
            "interrupt it or wait until it ends",
        )
        self.thread_id = thread_id
        self.turn_id = turn_id
        self.lock_path = lock
        self.holder_pid = os.getpid()
        self.kind = ""
        self.url = ""


class InvalidCursor(UserMistake):
    """A ``cursor`` that no page of the thread list gave."""


class TurnUnreachable(UserMistake):
    """A turn open in the log that this process does not run and cannot
    reach: another process runs it and takes no steering from here, or a
    kun that stopped left it open."""
