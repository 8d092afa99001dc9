"""Cross-turn goal resume timers (SPEC §7.4); the policy is
:mod:`kun.domain.resume_policy`.

One pending resume per thread at most, each a task in the service's task
group sleeping inside its own cancel scope: :meth:`GoalResumer.close` cancels
every one at once, so a timer never keeps a process alive. The sleep is
injected (tests pass a fake clock and never really wait). When a timer fires
the thread is re-read and the resume is dropped unless the same goal is
still active and the thread idle; a dropped or fired resume wakes whoever
waits in :meth:`GoalResumer.next_turn` (``kun run --goal``).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
from anyio.abc import TaskGroup

from kun.contracts import events as ev
from kun.domain.resume_policy import (
    Block,
    ResumeSettings,
    Schedule,
    decide_after_turn,
    resume_text,
    still_resumable,
    workspace_missing_block,
)
from kun.runtime.context import TurnRun, draft
from kun.runtime.errors import ThreadBusy, WorkspaceMissing

if TYPE_CHECKING:
    from kun.runtime.service import TurnService

__all__ = ["GoalResumer", "PendingResume", "Sleep", "clock_sleep"]

_log = logging.getLogger(__name__)

Sleep = Callable[[float], Awaitable[None]]


async def clock_sleep(seconds: float) -> None:
    """The sleep a resumer uses unless it is given one; looked up when a
    timer starts, so a test of a whole command can replace it."""
    await anyio.sleep(seconds)


@dataclass
class PendingResume:
    """A scheduled resume. ``turn_id`` is the turn it started, once fired
    (``None`` while waiting, or when it was dropped or cancelled)."""

    plan: Schedule
    options: dict[str, Any]
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    settled: anyio.Event = field(default_factory=anyio.Event)
    turn_id: str | None = None


class GoalResumer:
    def __init__(
        self,
        service: TurnService,
        task_group: TaskGroup,
        *,
        settings: ResumeSettings | None = None,
        sleep: Sleep | None = None,
    ) -> None:
        self._service = service
        self._tg = task_group
        self.settings = settings or ResumeSettings()
        self._sleep = sleep
        self._pending: dict[str, PendingResume] = {}
        self._last: dict[str, tuple[str, PendingResume]] = {}
        self._closed = False

    def pending(self, thread_id: str) -> PendingResume | None:
        """The thread's resume still waiting for its timer."""
        return self._pending.get(thread_id)

    def scheduled_after(self, thread_id: str, turn_id: str) -> PendingResume | None:
        """The resume the settling of ``turn_id`` scheduled, waiting, fired
        or dropped; ``None`` if it scheduled none (or a later turn did)."""
        last = self._last.get(thread_id)
        return last[1] if last is not None and last[0] == turn_id else None

    async def after_turn(self, run: TurnRun) -> None:
        """Decide once ``run`` has settled (before its ``done`` is set, so a
        waiter sees the pending resume). The resumed turn keeps the run's
        model, limits, effort and context window. Never raises: a failed
        decision is logged and leaves nothing pending."""
        options = {
            "model": run.model,
            "limits": run.limits,
            "reasoning_effort": run.reasoning_effort,
            "context_window": run.context_window,
        }
        try:
            await self._decide(run.thread_id, aborted=run.aborted, options=options)
        except Exception:
            _log.exception("deciding the goal resume of thread %s failed", run.thread_id)

    async def after_restart(self, thread_ids: Iterable[str]) -> None:
        """Resume the threads orphan reconciliation just settled, where the
        policy allows (the orphaned turn failed; it was not interrupted)."""
        for thread_id in thread_ids:
            try:
                await self._decide(thread_id, aborted=False, options={})
            except Exception:
                _log.exception("deciding the goal resume of thread %s failed", thread_id)

    async def _decide(self, thread_id: str, *, aborted: bool, options: dict[str, Any]) -> None:
        self.clear(thread_id)
        self._last.pop(thread_id, None)
        state = self._service.state(thread_id)
        turns = state.visible_turns
        if not turns:
            return
        decision = decide_after_turn(state, turns[-1], aborted=aborted, settings=self.settings)
        if isinstance(decision, Block):
            await self._block(thread_id, decision)
        elif isinstance(decision, Schedule) and not self._closed:
            pending = PendingResume(plan=decision, options=options)
            self._pending[thread_id] = pending
            self._last[thread_id] = (turns[-1].turn_id, pending)
            self._tg.start_soon(self._timer, thread_id, pending)

    def clear(self, thread_id: str) -> None:
        """Drop the thread's pending resume (a person started a turn, the
        goal ended)."""
        pending = self._pending.pop(thread_id, None)
        if pending is not None:
            pending.scope.cancel()
            pending.settled.set()

    def close(self) -> None:
        """Cancel every pending resume now and schedule no more."""
        self._closed = True
        for thread_id in list(self._pending):
            self.clear(thread_id)

    async def next_turn(self, thread_id: str, after_turn_id: str) -> str | None:
        """Wait for the resume scheduled when ``after_turn_id`` settled: the
        turn it started, or ``None`` (at once when it scheduled none; when
        it was dropped or cancelled). Asking after the timer fired is not
        too late."""
        pending = self.scheduled_after(thread_id, after_turn_id)
        if pending is None:
            return None
        await pending.settled.wait()
        return pending.turn_id

    async def _timer(self, thread_id: str, pending: PendingResume) -> None:
        try:
            with pending.scope:
                await (self._sleep or clock_sleep)(pending.plan.delay_seconds)
            if pending.scope.cancel_called or self._pending.get(thread_id) is not pending:
                return
            del self._pending[thread_id]
            pending.turn_id = await self._fire(thread_id, pending)
        except Exception:
            _log.exception("resuming the goal of thread %s failed", thread_id)
        finally:
            pending.settled.set()

    async def _fire(self, thread_id: str, pending: PendingResume) -> str | None:
        state = self._service.state(thread_id)
        if self._closed or self._service.running_turn(thread_id) is not None:
            return None
        if not still_resumable(state, pending.plan.key):
            return None
        attempt = pending.plan.attempt
        try:
            return await self._service.start_turn(
                thread_id,
                resume_text(attempt, self.settings),
                disable_user_input=pending.plan.disable_user_input,
                goal_resume=attempt,
                **pending.options,
            )
        except ThreadBusy:
            return None
        except WorkspaceMissing as exc:
            if state.settings.goal is not None:
                block = workspace_missing_block(thread_id, state.settings.goal, exc.workspace)
                await self._block(thread_id, block)
            return None

    async def _block(self, thread_id: str, block: Block) -> None:
        await self._service.write(
            thread_id,
            draft(ev.ThreadUpdated, goal=block.goal),
            draft(ev.WarningEvent, code=block.code, message=block.message),
        )
