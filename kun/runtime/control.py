"""The part of the TurnService that acts on turns already started:
steering, interrupting, waiting for a turn's end, and answering its
approvals and questions. Each answer is persisted before the waiting tool
is woken (:class:`kun.runtime.gates.Gate`), so an answer the log does not
hold never ran anything."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import anyio

from kun.contracts import events as ev
from kun.domain.state import ThreadState, TurnState
from kun.runtime.context import TurnRun, draft
from kun.runtime.errors import TurnNotRunning
from kun.runtime.gates import Gate
from kun.runtime.orphans import interrupt_results
from kun.runtime.turn_input import check_steering

if TYPE_CHECKING:
    from kun.runtime.recorder import EventRecorder

__all__ = ["TurnControl"]

_log = logging.getLogger(__name__)
_SHIELD_SECONDS = 10.0


class TurnControl:
    """Mixed into :class:`kun.runtime.service.TurnService`, which provides
    the attributes and ``write``."""

    recorder: EventRecorder
    approvals: Gate
    questions: Gate
    _runs: dict[str, TurnRun]

    if TYPE_CHECKING:

        async def write(
            self, thread_id: str, *events: ev.Event, durable: bool = True
        ) -> list[ev.Event]: ...

        async def advance(self, thread_id: str) -> str | None: ...

        async def cancel_queued(self, thread_id: str, turn_id: str) -> bool: ...

    def _running(self, thread_id: str, turn_id: str) -> TurnRun:
        run = self._runs.get(thread_id)
        if run is None or run.turn_id != turn_id:
            raise TurnNotRunning(thread_id, turn_id)
        return run

    async def steer_turn(self, thread_id: str, turn_id: str, text: str) -> None:
        """Queue ``text`` for the running turn; it reaches the model as a user
        message at the loop's next safe point. Blank text is refused."""
        check_steering(text)
        run = self._running(thread_id, turn_id)
        run.steering.push(text)
        await self.write(thread_id, draft(ev.TurnSteered, turn_id, text=text))

    async def interrupt_turn(self, thread_id: str, turn_id: str, *, discard: bool = False) -> None:
        """Abort the running turn: stop it, cancel what it waits for, answer
        the tool calls it cut short (so the next request still shows the model
        what ran), and record ``turn_aborted`` (``discard`` drops its
        generated items). If
        recording fails the turn is still stopped; reconciliation settles the
        log later. Once the abort is recorded the thread's next queued turn
        starts. A turn that waits in the queue is cancelled instead: it
        settles without running (:mod:`kun.runtime.queue`)."""
        run = self._runs.get(thread_id)
        if (run is None or run.turn_id != turn_id) and await self.cancel_queued(thread_id, turn_id):
            return
        run = self._running(thread_id, turn_id)
        run.aborted = True
        run.scope.cancel()
        with anyio.move_on_after(_SHIELD_SECONDS, shield=True):
            await run.done.wait()
            try:
                await self._record_abort(thread_id, turn_id, discard)
            except Exception:
                _log.exception("recording the abort of turn %s failed", turn_id)
            else:
                await self.advance(thread_id)

    async def _record_abort(self, thread_id: str, turn_id: str, discard: bool) -> None:
        state = self.recorder.state(thread_id)
        turn = _turn(state, turn_id)
        if turn is None or turn.settled:
            return
        ids = {item.id for item in turn.items}
        events: list[ev.Event] = [
            draft(ev.ApprovalResolved, turn_id, approval_id=a, decision="cancelled")
            for a in state.pending_approvals
            if a in ids
        ]
        events += [
            draft(ev.UserInputResolved, turn_id, request_id=q, status="cancelled")
            for q in state.pending_user_inputs
            if q in ids
        ]
        if not discard:
            events += [
                draft(ev.ItemCompleted, turn_id, item=result) for result in interrupt_results(turn)
            ]
        events.append(draft(ev.TurnAborted, turn_id, reason="interrupted", discard=discard))
        await self.write(thread_id, *events)

    async def wait_turn(self, thread_id: str, turn_id: str) -> TurnState:
        run = self._runs.get(thread_id)
        if run is not None and run.turn_id == turn_id:
            await run.done.wait()
        turn = _turn(self.recorder.state(thread_id), turn_id)
        if turn is None:
            raise TurnNotRunning(thread_id, turn_id)
        return turn

    # -- answers ---------------------------------------------------------------

    async def answer_approval(
        self, approval_id: str, decision: str, reason: str | None = None
    ) -> None:
        """Approve or deny a pending approval; a second answer is a conflict."""
        thread_id, turn_id = self.approvals.owner(approval_id)

        async def persist() -> None:
            await self.write(
                thread_id,
                draft(
                    ev.ApprovalResolved,
                    turn_id,
                    approval_id=approval_id,
                    decision=decision,
                    reason=reason,
                ),
            )

        await self.approvals.answer(approval_id, decision, reason, persist)

    async def answer_user_input(self, request_id: str, answer: str | None) -> None:
        """Answer a pending question (``None`` cancels it)."""
        thread_id, turn_id = self.questions.owner(request_id)
        status = "answered" if answer is not None else "cancelled"

        async def persist() -> None:
            await self.write(
                thread_id,
                draft(
                    ev.UserInputResolved,
                    turn_id,
                    request_id=request_id,
                    status=status,
                    answer=answer,
                ),
            )

        await self.questions.answer(request_id, status, answer, persist)


def _turn(state: ThreadState, turn_id: str) -> TurnState | None:
    return next((t for t in state.turns if t.turn_id == turn_id), None)
