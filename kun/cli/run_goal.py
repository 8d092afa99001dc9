"""``kun run --goal``: set a goal on the thread and stay in the foreground
while kun resumes it (SPEC §7.4), on the home's threads or a server's.

The first turn is shown as ``kun run`` shows any turn; then the command
asks whether settling it scheduled a resume (``Kun.goal_resume``: run here,
the resumer of this process; over ``--server``, the server's) and shows
each resumed turn the same way, until no resume is pending: the goal is
complete, blocked or paused, or resuming is suppressed (token budget spent,
a repetition stop, an interrupted turn). Every turn is shown from one event
feed, opened before the first turn starts: a resumed turn is the next
``turn_started`` on it, and a goal changed or blocked meanwhile (a
``thread_updated``, a warning) makes the command ask again. With ``--json``
the view (:class:`kun.cli.runjson.JsonView`) prints every event of the
thread once, those written between turns too.

A signal (Ctrl-C, SIGTERM, SIGHUP) interrupts the running turn, or ends the
wait, and the command exits: the goal is left as it is, still active. Run
here, no resume outlives the process (leaving the adapter cancels them);
over a server the server goes on resuming it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio

from kun.app.interface import ThreadState, TurnState
from kun.app.live import BLOCK_CODES, reachable
from kun.app.requests import StartTurn
from kun.cli.options import written_out
from kun.cli.run_config import config_note
from kun.cli.runjson import JsonView
from kun.cli.show_turn import show_turn
from kun.cli.terminal import LiveView
from kun.cli.tty import watch
from kun.contracts import events as ev

__all__ = ["drive_goal", "goal_line"]

RECHECK_SECONDS = 2.0
"""While a resume waits, how often to ask again in case it was dropped
without an event saying so (a failure the resumer only logged)."""


async def drive_goal(view: LiveView, after: int, request: StartTurn) -> TurnState:
    """Run the first turn and every resumed one; returns the last turn."""
    kun, thread_id = view.kun, view.thread_id
    signalled = anyio.Event()

    async def on_signal(signum: int) -> None:
        signalled.set()

    if isinstance(view, JsonView):
        view.written = after
    async with (
        view.feed(after) as events,
        reachable(kun, thread_id),
        anyio.create_task_group() as tg,
    ):
        await tg.start(watch, on_signal)
        turn_id: str | None = (await kun.start_turn(thread_id, request)).turn_id
        config_note(kun, (await kun.thread(thread_id)).settings.workspace)
        turn: TurnState | None = None
        while turn_id is not None:
            turn = await show_turn(view, events, turn_id, signalled)
            if signalled.is_set():
                break
            turn_id = await _next_resume(view, events, turn.turn_id, signalled)
        tg.cancel_scope.cancel()
    assert turn is not None
    state = await kun.thread(thread_id)
    view.note(goal_line(state), "warn" if signalled.is_set() else "dim")
    return turn


async def _next_resume(
    view: LiveView, events: AsyncIterator[ev.Event], after: str, signalled: anyio.Event
) -> str | None:
    """The turn resumed after turn ``after``, or ``None`` when none was
    scheduled, it was dropped, or a signal came first (a turn it had just
    started is then interrupted)."""
    kun, thread_id = view.kun, view.thread_id
    resume = await kun.goal_resume(thread_id, after)
    if resume.state == "none":
        return None
    if resume.state == "waiting":
        view.note(
            f"goal active: resuming in {resume.delay_seconds or 0:g} s "
            f"(attempt {resume.attempt}/{resume.max_attempts})"
        )
    started: list[str] = []
    with anyio.CancelScope() as scope:

        async def stop() -> None:
            await signalled.wait()
            scope.cancel()

        async with anyio.create_task_group() as tg:
            tg.start_soon(stop)
            started.extend(await _started(view, events, after, resume.turn_id))
            tg.cancel_scope.cancel()
    if signalled.is_set():
        if started:
            await view.interrupt(started[0])
        return None
    return started[0] if started else None


async def _started(
    view: LiveView, events: AsyncIterator[ev.Event], after: str, turn_id: str | None
) -> list[str]:
    """The resumed turn, once it starts (``[]``: the resume was dropped).
    Its ``turn_started`` comes on ``events``, which the view has not read
    past; a change of the goal makes the resume be asked about again."""
    kun, thread_id = view.kun, view.thread_id
    while turn_id is None:
        with anyio.move_on_after(RECHECK_SECONDS):
            async for event in events:
                if isinstance(event, ev.TurnStarted) and event.turn_id is not None:
                    return [event.turn_id]
                if isinstance(event, ev.ThreadUpdated | ev.WarningEvent):
                    break
        resume = await kun.goal_resume(thread_id, after)
        if resume.state in ("none", "dropped"):
            return _later_turn(await kun.thread(thread_id), after)
        turn_id = resume.turn_id
    async for event in events:  # up to the resumed turn's start, so it is shown whole
        if isinstance(event, ev.TurnStarted) and event.turn_id == turn_id:
            break
    return [turn_id]


def _later_turn(state: ThreadState, after: str) -> list[str]:
    """A turn started after turn ``after`` (a resume that fired and ran
    while the feed was read up to a change of the goal), or ``[]``."""
    ids = [t.turn_id for t in state.turns]
    later = ids[ids.index(after) + 1 :] if after in ids else []
    return later[:1]


def goal_line(state: ThreadState) -> str:
    """Where the goal stands, for the last line of ``kun run --goal``."""
    goal = state.settings.goal
    if goal is None:
        return "no goal"
    if goal.status == "blocked":
        reason = next((w.message for w in reversed(state.warnings) if w.code in BLOCK_CODES), "")
        reason = written_out(reason, ("resume", state.thread_id, "--workspace", "DIR"))
        reason = reason.removeprefix("goal blocked: ")
        return f"goal blocked: {reason}" if reason else "goal blocked"
    if goal.status == "active":
        return "goal still active (not resumed any more in this run)"
    return f"goal {goal.status}"
