"""``kun run --goal``: set a goal on the thread and stay in the foreground
while kun resumes it (SPEC §7.4).

The first turn is shown as ``kun run`` shows any turn; then the command
waits for the goal's resume timer (:mod:`kun.runtime.resume`) and shows each
resumed turn the same way, until no resume is pending: the goal is complete,
blocked or paused, or resuming is suppressed (token budget spent, a
repetition stop, an interrupted turn). The waits and the number of
resumed turns without progress are ``[runtime] goal_resume_*``
(:func:`kun.app.session.resume_settings`). With ``--json`` the view
(:class:`kun.cli.runjson.JsonView`) prints every event of the thread once,
those written between turns too. A signal (Ctrl-C, SIGTERM, SIGHUP)
interrupts the running turn, or ends the wait, and the command exits: the
goal is left as it is, still active, for a later ``kun run --thread`` or
session; no resume outlives the process.
"""

from __future__ import annotations

import anyio

from kun.cli.options import written_out
from kun.cli.show_turn import show_turn
from kun.cli.terminal import LiveView
from kun.cli.tty import watch
from kun.contracts.threads import Goal
from kun.domain.resume_policy import BLOCK_CODES
from kun.domain.state import TurnState
from kun.runtime.service import TurnService

__all__ = ["drive_goal", "goal_line", "set_goal"]


async def set_goal(
    service: TurnService, thread_id: str, objective: str, budget: int | None
) -> None:
    """Record a new goal (replacing any the thread had)."""
    goal = Goal(objective=objective, token_budget=budget, created_at=service.recorder.clock())
    await service.update_thread(thread_id, goal=goal)


async def drive_goal(
    view: LiveView, after: int, prompt: str, *, unattended: bool, plan_mode: bool = False
) -> TurnState:
    """Run the first turn and every resumed one; returns the last turn."""
    service, thread_id = view.service, view.thread_id
    signalled = anyio.Event()

    async def on_signal(signum: int) -> None:
        signalled.set()

    async with anyio.create_task_group() as tg:
        await tg.start(watch, on_signal)
        turn_id: str | None = await service.start_turn(
            thread_id, prompt, disable_user_input=unattended, plan_mode=plan_mode
        )
        turn: TurnState | None = None
        while turn_id is not None:
            turn = await show_turn(view, after, turn_id, signalled)
            if signalled.is_set():
                break
            turn_id = await _next_resume(view, turn.turn_id, signalled)
            if turn_id is not None:
                after = _started_seq(service, thread_id, turn_id) - 1
        tg.cancel_scope.cancel()
    assert turn is not None
    view.note(goal_line(service, thread_id), "warn" if signalled.is_set() else "dim")
    return turn


async def _next_resume(view: LiveView, after: str, signalled: anyio.Event) -> str | None:
    """The turn resumed after turn ``after``, or ``None`` when none was
    scheduled, it was dropped, or a signal came first (every pending resume
    is then cancelled, and a turn it had just started is interrupted)."""
    resumes = view.service.resumes
    pending = resumes.scheduled_after(view.thread_id, after)
    if pending is None:
        return None
    plan = pending.plan
    view.note(
        f"goal active: resuming in {plan.delay_seconds:g} s "
        f"(attempt {plan.attempt}/{resumes.settings.max_attempts})"
    )
    started: list[str | None] = []
    async with anyio.create_task_group() as tg:

        async def wait() -> None:
            started.append(await resumes.next_turn(view.thread_id, after))
            tg.cancel_scope.cancel()

        async def stop() -> None:
            await signalled.wait()
            resumes.close()
            tg.cancel_scope.cancel()

        tg.start_soon(wait)
        tg.start_soon(stop)
    if signalled.is_set():
        resumes.close()
        if started and started[0] is not None:
            await view.interrupt(started[0])
        return None
    return started[0] if started else None


def _started_seq(service: TurnService, thread_id: str, turn_id: str) -> int:
    turn = next(t for t in service.state(thread_id).turns if t.turn_id == turn_id)
    return turn.started_seq


def goal_line(service: TurnService, thread_id: str) -> str:
    """Where the goal stands, for the last line of ``kun run --goal``."""
    state = service.state(thread_id)
    goal = state.settings.goal
    if goal is None:
        return "no goal"
    if goal.status == "blocked":
        reason = next((w.message for w in reversed(state.warnings) if w.code in BLOCK_CODES), "")
        reason = written_out(reason, ("resume", thread_id, "--workspace", "DIR"))
        reason = reason.removeprefix("goal blocked: ")
        return f"goal blocked: {reason}" if reason else "goal blocked"
    if goal.status == "active":
        return "goal still active (not resumed any more in this run)"
    return f"goal {goal.status}"
