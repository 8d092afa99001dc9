"""Re-arming a suspended turn (:mod:`kun.domain.suspension`).

The process that serves a thread after a stop (``kun serve`` for every
thread at start-up, the session for the thread it opens) re-arms a turn that
was waiting for an approval or a question: the same approval id or question
id is answerable again at once (:meth:`kun.runtime.gates.Gate.arm`), and the
turn's task waits on it and then goes on from the log, as if the process had
never stopped (:func:`kun.runtime.dispatch.resume_suspended`, then the loop).
The turn keeps its recorded context (``turn_started``), so its requests
start with the same bytes as before the stop.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from kun.contracts import events as ev
from kun.contracts.context import TurnContext
from kun.domain.state import ThreadState, TurnState
from kun.domain.suspension import Suspension, find_suspension
from kun.model.port import ModelClient
from kun.runtime.context import TurnLimits, TurnRun
from kun.runtime.dispatch import resume_suspended
from kun.runtime.errors import TurnWaiting
from kun.runtime.loop import run_turn

if TYPE_CHECKING:
    from kun.runtime.service import TurnService

__all__ = ["open_suspension", "rearm", "refuse_if_waiting"]


def open_suspension(state: ThreadState) -> tuple[TurnState, Suspension] | None:
    """The thread's open turn and where it waits, when it is suspended."""
    turn = state.running_turn
    if turn is None:
        return None
    suspension = find_suspension(state, turn)
    return None if suspension is None else (turn, suspension)


async def rearm(
    service: TurnService,
    thread_id: str,
    *,
    model: ModelClient | None = None,
    limits: TurnLimits | None = None,
    context_window: int | None = None,
) -> str | None:
    """Re-arm the thread's suspended turn; its id, or ``None`` when the
    thread has none (or its turn already runs here). ``model`` (the
    service's by default), ``limits`` and ``context_window`` are as for
    :meth:`TurnService.start_turn`. The thread stays claimed only when a
    turn was re-armed (it runs here until answered and settled); a thread
    with nothing to re-arm is only read, never claimed."""
    if service.running_turn(thread_id) is not None:
        return None
    if open_suspension(await service.recorder.view(thread_id)) is None:
        return None
    async with service.holding(thread_id):
        return await _rearm(service, thread_id, model, limits, context_window)


async def _rearm(
    service: TurnService,
    thread_id: str,
    model: ModelClient | None,
    limits: TurnLimits | None,
    context_window: int | None,
) -> str | None:
    state = await service.open_thread(thread_id)
    if service.running_turn(thread_id) is not None:
        return None
    found = open_suspension(state)
    if found is None:
        return None
    turn, suspension = found
    started = _turn_started(service, thread_id, turn)
    run = service.new_run(
        thread_id,
        turn.turn_id,
        disable_user_input=turn.disable_user_input,
        model=model,
        limits=limits,
        context=started.context
        if started is not None and isinstance(started.context, TurnContext)
        else None,
        context_window=context_window,
    )
    gate = run.approvals if suspension.kind == "approval" else run.questions
    gate.arm(suspension.pending_id, thread_id, turn.turn_id)
    service.launch(run, partial(run_turn, resume=partial(_resume, suspension=suspension)))
    return turn.turn_id


async def _resume(run: TurnRun, suspension: Suspension) -> None:
    gate = run.approvals if suspension.kind == "approval" else run.questions
    try:
        await resume_suspended(run, suspension)
    finally:
        gate.disarm(suspension.pending_id)


def _turn_started(service: TurnService, thread_id: str, turn: TurnState) -> ev.TurnStarted | None:
    for event in service.recorder.store.read(
        thread_id, after=turn.started_seq - 1, limit=1, mode="tolerant"
    ):
        if isinstance(event, ev.TurnStarted):
            return event
    return None


def refuse_if_waiting(state: ThreadState, what: str) -> None:
    """Raise :class:`TurnWaiting` when the thread's open turn is suspended:
    a new turn does not push aside a question the user has not answered."""
    found = open_suspension(state)
    if found is None:
        return
    turn, suspension = found
    if suspension.kind == "approval":
        waits_for = f"approval of {suspension.call.name} ({suspension.pending_id})"
    else:
        waits_for = f"an answer to its question ({suspension.pending_id})"
    raise TurnWaiting(state.thread_id, turn.turn_id, what, waits_for)
