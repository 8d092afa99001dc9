"""``get_goal``, ``create_goal``, ``update_goal``: the thread's goal, as the
model may read and change it (SPEC §7.1).

The model may only report a goal ``complete`` or ``blocked``: pausing,
resuming and clearing belong to the user (or the system). The schema offers
those two statuses only, and :class:`UpdateGoal` checks again at run time,
because a schema is advice to a model, not a guarantee. ``create_goal``
never replaces a goal that is active or paused (the user's): the model is
told how it can be replaced instead. Every change is recorded through
``ctx.set_goal`` as a ``thread_updated`` event, like the todo list.
"""

from __future__ import annotations

import time
from typing import Any

import msgspec

from kun.contracts.threads import MODEL_GOAL_STATUSES, Goal
from kun.tools.base import ToolContext, ToolEffect, ToolOutput, make_spec
from kun.tools.errors import ToolError

__all__ = ["CreateGoal", "GetGoal", "UpdateGoal"]

_NO_GOAL = "This thread has no goal."

GET_SPEC = make_spec(
    "get_goal",
    "Show this thread's goal: objective, status, time and tokens used so far, and the token "
    "budget (and whether it is spent).",
    {},
)

CREATE_SPEC = make_spec(
    "create_goal",
    "Set a goal for this thread: an objective that outlives this turn, worked on until it is "
    "audited complete or reported blocked. Refused while a goal is active or paused.",
    {
        "objective": {
            "type": "string",
            "minLength": 1,
            "description": "What done looks like, concretely enough to audit against.",
        },
        "token_budget": {
            "type": "integer",
            "minimum": 1,
            "description": "Total tokens the goal may use; omit for no budget.",
        },
    },
    required=["objective"],
)

UPDATE_SPEC = make_spec(
    "update_goal",
    "Report the active goal complete (only after auditing every requirement against the real "
    "state) or blocked (only after the same blocker persisted for 3 goal turns). You cannot "
    "pause, resume or clear a goal: only the user can.",
    {"status": {"enum": list(MODEL_GOAL_STATUSES)}},
    required=["status"],
)


def _unavailable() -> ToolError:
    return ToolError("goal_unavailable", "This thread has no goal to change.")


class GetGoal:
    spec = GET_SPEC
    effect: ToolEffect = "state"

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        goal = ctx.get_goal()
        return ToolOutput(output=_NO_GOAL if goal is None else goal.describe())


class CreateGoal:
    spec = CREATE_SPEC
    effect: ToolEffect = "state"

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        if ctx.set_goal is None:
            raise _unavailable()
        current = ctx.get_goal()
        if current is not None and current.status in ("active", "paused"):
            return ToolOutput(
                output=f"Not created: this thread already has a {current.status} goal "
                f"({current.objective!r}). To replace it, first report it with update_goal "
                "(complete or blocked), or ask the user to clear it (/goal clear).",
                is_error=True,
                code="goal_exists",
            )
        goal = Goal(
            objective=args["objective"],
            token_budget=args.get("token_budget"),
            created_at=time.time_ns() // 1_000_000,
        )
        await ctx.set_goal(goal)
        return ToolOutput(output="Goal created.\n" + goal.describe())


class UpdateGoal:
    spec = UPDATE_SPEC
    effect: ToolEffect = "state"

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        status = args.get("status")
        if status not in MODEL_GOAL_STATUSES:
            return ToolOutput(
                output=f"Not updated: you may only set status complete or blocked, not "
                f"{status!r}. Pausing, resuming and clearing a goal are the user's.",
                is_error=True,
                code="invalid_goal_status",
            )
        if ctx.set_goal is None:
            raise _unavailable()
        goal = ctx.get_goal()
        if goal is None or goal.status != "active":
            state = "no goal" if goal is None else f"a {goal.status} goal"
            return ToolOutput(
                output=f"Not updated: this thread has {state}; only an active goal can be "
                "reported complete or blocked.",
                is_error=True,
                code="goal_not_active",
            )
        updated = msgspec.structs.replace(goal, status=status)
        await ctx.set_goal(updated)
        recorded = ctx.get_goal() or updated
        return ToolOutput(output=f"Goal marked {status}.\n" + recorded.describe())
