"""Errors of the runtime (the TurnService and the loop).

::

    UserMistake (kun.errors)
    ├── ThreadBusy          a thread with a running turn was asked to start
    │                       another, or to rewind
    │   └── QueuedTurnsWaiting  turns wait in the thread's queue: a rewind,
    │                       its undo or a compaction would pass them by
    ├── QueueFull           a thread already has MAX_QUEUED turns queued
    │                       (HTTP 409 ``turns_queued``)
    ├── TurnNotRunning      steering or interrupting a turn that is not running
    ├── SteeringFull        a turn's steering queue is at its limit
    ├── AnswerConflict      an approval or question that is not pending (already
    │                       answered, expired, or never asked): HTTP 409
    ├── UnknownTurn         a rewind to a turn the thread does not have
    ├── SeqOutOfRange       a fork point past the end of the log
    ├── BlankPrompt         a turn or steering message with no text (and no
    │                       attachment): history repair would drop it and
    │                       send a body no provider accepts
    ├── WorkspaceMissing    a turn on a thread whose workspace folder does not
    │                       exist here (an imported thread names the other
    │                       machine's): refused before anything is recorded
    ├── ThreadNotOpen       the recorder has not opened the thread
    ├── ThreadExists        thread_created for a thread that has events
    └── RecorderNotRunning  record() outside ``async with recorder``
    RuntimeFailure (kun.errors)
    ├── TurnLimitReached    a turn limit (steps, wall time, tool calls, budget)
    │                       stopped the turn; ``code`` names it
    └── FollowerGap         a follower found a seq missing from live and log
"""

from __future__ import annotations

import shlex

from kun.errors import RuntimeFailure, UserMistake


class ThreadBusy(UserMistake):
    def __init__(self, thread_id: str, turn_id: str, what: str) -> None:
        super().__init__(f"thread {thread_id!r} is running turn {turn_id!r}: cannot {what}")
        self.thread_id = thread_id
        self.turn_id = turn_id


class TurnWaiting(ThreadBusy):
    """The thread's last turn was left waiting for an answer by a kun that
    stopped (:mod:`kun.domain.suspension`); it is answered where the thread
    is served, not replaced by a new turn."""

    def __init__(self, thread_id: str, turn_id: str, what: str, waits_for: str) -> None:
        UserMistake.__init__(
            self,
            f"thread {thread_id!r} has turn {turn_id!r} waiting for {waits_for}: cannot {what}; "
            f"answer it in the session (kun resume {thread_id[:12]}; Esc there interrupts it) "
            "or through kun serve",
        )
        self.suggests = ("resume", thread_id[:12])
        self.thread_id = thread_id
        self.turn_id = turn_id


class QueuedTurnsWaiting(ThreadBusy):
    """Turns wait in the thread's queue (:mod:`kun.runtime.queue`) and no
    turn runs yet to hold them back (a process died with them queued): a
    rewind, its undo or a compaction is refused until they have run or
    been interrupted, so history never changes under a message written
    for it."""

    def __init__(self, thread_id: str, queued: tuple[str, ...], what: str) -> None:
        UserMistake.__init__(
            self,
            f"thread {thread_id!r} has {len(queued)} queued turn(s) waiting to run "
            f"(next {queued[0]!r}): cannot {what}; wait for them or interrupt them",
        )
        self.thread_id = thread_id
        self.turn_id = queued[0]


class QueueFull(UserMistake):
    """A turn sent with ``multitask`` ``enqueue`` to a thread whose queue
    already holds ``limit`` turns."""

    def __init__(self, thread_id: str, limit: int) -> None:
        super().__init__(
            f"thread {thread_id!r} already has {limit} queued turns: "
            "wait for some to run, or interrupt them"
        )
        self.thread_id = thread_id
        self.limit = limit


class TurnNotRunning(UserMistake):
    def __init__(self, thread_id: str, turn_id: str) -> None:
        super().__init__(f"turn {turn_id!r} of thread {thread_id!r} is not running")
        self.thread_id = thread_id
        self.turn_id = turn_id


class SteeringFull(UserMistake):
    """Steering refused: the queue is full, or (``settled``) the turn has
    taken its last step."""

    def __init__(self, turn_id: str, reason: str, *, settled: bool = False) -> None:
        super().__init__(f"turn {turn_id!r} takes no more steering: {reason}")
        self.turn_id = turn_id
        self.settled = settled


class AnswerConflict(UserMistake):
    def __init__(self, kind: str, pending_id: str) -> None:
        super().__init__(f"{kind} {pending_id!r} is not pending (already answered, or unknown)")
        self.kind = kind
        self.pending_id = pending_id


class TurnLimitReached(RuntimeFailure):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class ThreadNotOpen(UserMistake):
    """The thread is not open in this recorder: ``open()`` it, or start a
    new thread with a ``thread_created`` event."""

    def __init__(self, thread_id: str, what: str) -> None:
        super().__init__(
            f"thread {thread_id!r} is not open in this recorder: cannot {what} "
            f"(open() it first, or record thread_created to start a new thread)"
        )
        self.thread_id = thread_id


class ThreadExists(UserMistake):
    """``thread_created`` was recorded for a thread that already has events."""

    def __init__(self, thread_id: str, last_seq: int) -> None:
        super().__init__(
            f"thread {thread_id!r} already exists (last seq {last_seq}): open() it instead"
        )
        self.thread_id = thread_id
        self.last_seq = last_seq


class RecorderNotRunning(UserMistake):
    """``record`` outside ``async with recorder``: the coalescing timers need
    the recorder's task group."""

    def __init__(self) -> None:
        super().__init__("the recorder is not running: use it inside `async with recorder:`")


class FollowerGap(RuntimeFailure):
    """A follower of ``thread_id`` saw live event ``seq`` after serving
    ``last`` and went back to the log, which did not have ``seq`` either: a
    publisher published an event it had not persisted. Never skipped
    silently."""

    def __init__(self, thread_id: str, last: int, seq: int) -> None:
        super().__init__(
            f"thread {thread_id!r}: live event {seq} came after {last}, and the log does "
            f"not have {last + 1}..{seq} (was an event published before it was persisted?)"
        )
        self.thread_id = thread_id
        self.last = last
        self.seq = seq


class UnknownTurn(UserMistake):
    def __init__(self, thread_id: str, turn_id: str) -> None:
        super().__init__(
            f"thread {thread_id!r} has no turn {turn_id!r} "
            f"(kun replay {thread_id} --json lists them)"
        )
        self.suggests = ("replay", thread_id, "--json")
        self.thread_id = thread_id
        self.turn_id = turn_id


class BlankPrompt(UserMistake):
    def __init__(self, what: str = "prompt") -> None:
        super().__init__(f"the {what} is blank: say what the model should do")
        self.what = what


class SeqOutOfRange(UserMistake):
    def __init__(self, thread_id: str, seq: int, last_seq: int) -> None:
        super().__init__(f"thread {thread_id!r} has {last_seq} events: seq {seq} is past its end")
        self.thread_id = thread_id
        self.seq = seq
        self.last_seq = last_seq


class WorkspaceMissing(UserMistake):
    """The thread's workspace is not a folder here, so no tool could work in
    it: the turn is refused before it is recorded, saying how to give the
    thread one (``str``: the command line's words; :meth:`over_http`: the
    API's)."""

    def __init__(self, thread_id: str, workspace: str) -> None:
        self.thread_id = thread_id
        self.workspace = workspace
        self.suggests = ("run", "--thread", thread_id, "--workspace", "DIR", "PROMPT")
        self.also_suggests = (("resume", thread_id, "--workspace", "DIR"),)
        super().__init__(
            f"the thread's workspace {workspace} does not exist here; "
            f"{shlex.join(['kun', *self.suggests])} "
            f"(or {shlex.join(['kun', *self.also_suggests[0]])}) gives it one"
        )

    def over_http(self) -> str:
        return (
            f"the thread's workspace {self.workspace} does not exist here; "
            f'PATCH /v1/threads/{self.thread_id} with {{"workspace": DIR}} gives it one'
        )
