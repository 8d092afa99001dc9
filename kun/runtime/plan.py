"""Plan mode in the running turn (SPEC §7.5): which tools a step gets, what
it is told, which calls are refused, and how a plan is recorded.

The rules are pure (:mod:`kun.domain.plan_mode`); this module reads the
turn's recorded state for them, so every step of a plan-mode turn (and a
replay) narrows the same way: the turn's ``plan_mode`` flag is in its
``turn_started``, and "a plan exists" is a ``plan`` item in the turn.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from kun.contracts import events as ev
from kun.contracts.items import Plan
from kun.contracts.model import ToolSpec
from kun.domain.goals import keep_goal_tools
from kun.domain.plan_mode import (
    PLAN_MODE_INSTRUCTION,
    PLAN_TOOL,
    has_plan,
    plan_mode_tools,
    plan_todos,
    without_plan_tool,
)
from kun.domain.state import ThreadState, TurnState
from kun.ids import new_thread_local_id
from kun.runtime.context import TurnRun, draft
from kun.tools.base import ToolOutput

__all__ = ["plan_note", "plan_recorder", "refuse_outside_plan", "step_tools"]

NOT_IN_PLAN_MODE = "not_allowed_in_plan_mode"


def _turn(run: TurnRun, state: ThreadState) -> TurnState | None:
    return next((t for t in state.turns if t.turn_id == run.turn_id), None)


def in_plan_mode(run: TurnRun, state: ThreadState) -> bool:
    turn = _turn(run, state)
    return turn is not None and turn.plan_mode


def step_tools(run: TurnRun, state: ThreadState) -> tuple[ToolSpec, ...]:
    """The tools of the next step: the turn's catalogue, narrowed in plan
    mode (``create_plan`` only until the turn has a plan), without
    ``create_plan`` otherwise. The request then adds back an active goal's
    goal and todo tools (:func:`kun.domain.goals.keep_goal_tools`)."""
    turn = _turn(run, state)
    if turn is None or not turn.plan_mode:
        return without_plan_tool(run.tool_specs)
    effects = {s.name: run.tools.effect(s.name) for s in run.tool_specs}
    return plan_mode_tools(run.tool_specs, effects, plan_exists=has_plan(turn.items))


def plan_note(run: TurnRun, state: ThreadState) -> str | None:
    """The plan-mode instruction while the turn has no plan yet."""
    turn = _turn(run, state)
    if turn is None or not turn.plan_mode or has_plan(turn.items):
        return None
    return PLAN_MODE_INSTRUCTION


def refuse_outside_plan(run: TurnRun, name: str) -> ToolOutput | None:
    """An error result for a call the step did not offer because of plan
    mode (a model may call a tool it was not given): a change tool in plan
    mode, ``create_plan`` outside it or twice. ``None``: the call may run."""
    state = run.state()
    offered = keep_goal_tools(step_tools(run, state), run.tool_specs, state.settings.goal)
    if name in {s.name for s in offered}:
        return None
    if in_plan_mode(run, state):
        if name == PLAN_TOOL:
            message = "This turn already has its plan. Present it and stop."
        else:
            message = (
                f"Plan mode: {name} is not available, nothing may be changed. Keep using the "
                "read-only tools, then call create_plan with the whole plan in markdown (do "
                "not copy this message into the plan)."
            )
        return ToolOutput(output=message, is_error=True, code=NOT_IN_PLAN_MODE)
    if name == PLAN_TOOL:
        return ToolOutput(
            output="create_plan is for plan mode only. Do the work, or describe the plan in "
            "your answer.",
            is_error=True,
            code="not_in_plan_mode",
        )
    return None


def plan_recorder(
    run: TurnRun, *, from_reply: bool = False
) -> Callable[[str, str], Awaitable[str]]:
    """``ToolContext.record_plan`` for ``run``: the ``plan`` item, then the
    plan's checklist as the thread's todos. A checklist that could not be
    recorded is a warning only: the plan stands. ``from_reply``: the call
    is kun's own, recording the model's prose (:mod:`kun.runtime.rounds`)."""

    async def record(summary: str, markdown: str) -> str:
        workspace = run.state().settings.workspace
        plan = Plan(
            id=new_thread_local_id("plan"),
            markdown=markdown,
            summary=summary,
            workspace=workspace,
            from_reply=from_reply,
        )
        await run.write(draft(ev.ItemCompleted, run.turn_id, item=plan))
        todos = plan_todos(markdown)
        if not todos:
            return "It has no checklist (- [ ] step), so the todo list is unchanged."
        try:
            await run.write(draft(ev.ThreadUpdated, todos=todos))
        except Exception as exc:
            message = f"the plan's checklist was not copied to the todo list: {exc}"
            await run.write(
                draft(ev.WarningEvent, run.turn_id, code="plan_todos_failed", message=message)
            )
            return "Its checklist could not be copied to the todo list."
        return f"Its {len(todos)} checklist items are now the thread's todo list."

    return record
