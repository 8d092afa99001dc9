"""Errors of the runtime (the TurnService and the loop).

::

    UserMistake (kun.errors)
    ├── ThreadBusy          a thread with a running turn was asked to start
    │                       another, or to rewind
    ├── TurnNotRunning      steering or interrupting a turn that is not running
    ├── SteeringFull        a turn's steering queue is at its limit
    └── AnswerConflict      an approval or question that is not pending (already
                            answered, expired, or never asked): HTTP 409
    RuntimeFailure (kun.errors)
    └── TurnLimitReached    a turn limit (steps, wall time, tool calls, budget)
                            stopped the turn; ``code`` names it
"""

from __future__ import annotations

from kun.errors import RuntimeFailure, UserMistake


class ThreadBusy(UserMistake):
    def __init__(self, thread_id: str, turn_id: str, what: str) -> None:
        super().__init__(f"thread {thread_id!r} is running turn {turn_id!r}: cannot {what}")
        self.thread_id = thread_id
        self.turn_id = turn_id


class TurnNotRunning(UserMistake):
    def __init__(self, thread_id: str, turn_id: str) -> None:
        super().__init__(f"turn {turn_id!r} of thread {thread_id!r} is not running")
        self.thread_id = thread_id
        self.turn_id = turn_id


class SteeringFull(UserMistake):
    def __init__(self, turn_id: str, reason: str) -> None:
        super().__init__(f"turn {turn_id!r} takes no more steering: {reason}")
        self.turn_id = turn_id


class AnswerConflict(UserMistake):
    def __init__(self, kind: str, pending_id: str) -> None:
        super().__init__(f"{kind} {pending_id!r} is not pending (already answered, or unknown)")
        self.kind = kind
        self.pending_id = pending_id


class TurnLimitReached(RuntimeFailure):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
