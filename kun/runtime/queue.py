"""Runs as a queue on one node: turns sent while a thread's turn runs.

A turn sent with ``multitask`` ``enqueue`` while the thread's turn runs (or
waits for an approval or an answer) is recorded as ``turn_queued``, under
the thread's lock, with its user message (attachments already kept as side
files) and every option its ``turn_started`` will carry. When the running
turn settles, the service starts the first queued turn: the same id, its
``turn_started`` and nothing else (the message is already in the log), so
the queue is one turn at a time, in the order the log holds. Queued turns
are started where the thread is served: by the process that queued them,
or, when that one died, by the next writer to open the thread (``kun
serve`` and ``kun reconcile`` at start-up, a new turn on it), after the
turn the dead process left running is settled ``orphaned``.

What the log does not hold (the model client itself, the turn limits, a
context window) is kept in memory beside the queue (:class:`QueuedRun`);
a turn started after a restart runs on a client for its recorded provider
and model (the service's ``queue_models``, else its own model) with the
runtime's limits, as every turn after a restart does.

Cancelling a queued turn (interrupting it) records ``turn_aborted`` with
reason ``cancelled``: it settles without running. While turns wait, a
rewind, its undo and a compaction are refused
(:class:`~kun.runtime.errors.QueuedTurnsWaiting`): each would change the
history the waiting messages were written after. A thread holds at most
:data:`MAX_QUEUED` queued turns (:class:`~kun.runtime.errors.QueueFull`):
a client in a loop gets a clear refusal, not a log that grows for hours
of work nobody will read.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from kun.contracts import events as ev
from kun.contracts.items import UserMessage
from kun.domain.state import QUEUE_CANCELLED, ThreadState, TurnState
from kun.model.port import ModelClient
from kun.runtime.context import TurnLimits, draft
from kun.runtime.errors import QueuedTurnsWaiting, QueueFull
from kun.store.port import EventStore

__all__ = [
    "MAX_QUEUED",
    "ModelFor",
    "QueuedRun",
    "cancel_event",
    "check_room",
    "next_queued",
    "queued_event",
    "queued_options",
    "refuse_if_queued",
]

MAX_QUEUED = 1000
"""Queued turns per thread; one more is refused (HTTP 409 ``turns_queued``)."""

ModelFor = Callable[[str | None, str | None], ModelClient | None]
"""A client for a recorded provider and model (``None``: the service's own)."""


@dataclasses.dataclass(frozen=True)
class QueuedRun:
    """What a queued turn runs with besides its logged options: kept in
    memory by the process that queued it."""

    model: ModelClient
    limits: TurnLimits | None = None
    context_window: int | None = None
    reasoning_effort: str | None = None


def queued_event(
    turn_id: str,
    message: UserMessage,
    model: ModelClient,
    *,
    disable_user_input: bool,
    plan_mode: bool,
    reasoning_effort: str | None,
) -> ev.TurnQueued:
    event: ev.TurnQueued = draft(
        ev.TurnQueued,
        turn_id,
        message=message,
        provider=model.provider,
        model=model.model,
        disable_user_input=disable_user_input,
        plan_mode=plan_mode,
        reasoning_effort=reasoning_effort,
    )
    return event


def cancel_event(turn_id: str) -> ev.TurnAborted:
    event: ev.TurnAborted = draft(ev.TurnAborted, turn_id, reason=QUEUE_CANCELLED)
    return event


def check_room(state: ThreadState) -> None:
    if len(state.queued_turns) >= MAX_QUEUED:
        raise QueueFull(state.thread_id, MAX_QUEUED)


def refuse_if_queued(state: ThreadState, what: str) -> None:
    queued = state.queued_turns
    if queued:
        raise QueuedTurnsWaiting(state.thread_id, queued, what)


def next_queued(state: ThreadState) -> TurnState | None:
    """The turn to start now: the first queued one, when no turn runs."""
    if state.running_turn is not None:
        return None
    return next((t for t in state.turns if t.status == "queued"), None)


def queued_options(store: EventStore, thread_id: str, turn: TurnState) -> ev.TurnQueued | None:
    """The ``turn_queued`` of a queued turn, read back from the log (its
    ``started_seq`` is that event's while it waits): what a process that
    did not queue it needs to start it unchanged."""
    for event in store.read(thread_id, after=turn.started_seq - 1, limit=1, mode="tolerant"):
        if isinstance(event, ev.TurnQueued) and event.turn_id == turn.turn_id:
            return event
    return None
