"""Goals (SPEC §7.1): pure rules the tools, the request builder, the
approval check and the interactive session share, so each reads a goal the
same way.

A goal is *active* while the model should keep working on it; its time and
tokens are charged by the reducer (:func:`charge`) from the turns that ran
while it was active, so a replay gives the same numbers. Its budget is
*exhausted* once the tokens used reach ``token_budget``: the goal stays
active (only the user or the system changes that) but the resume logic
stops scheduling turns for it and the instruction says the budget is spent.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from kun.contracts.model import ToolSpec
from kun.contracts.threads import MODEL_GOAL_STATUSES, Goal
from kun.contracts.usage import UsageTotals

__all__ = [
    "ALWAYS_ALLOWED_WITH_GOAL",
    "MODEL_SETTABLE_STATUSES",
    "budget_exhausted",
    "charge",
    "charge_turn",
    "describe_goal",
    "exempt_with_goal",
    "goal_active",
    "goal_instruction",
    "goal_usage_line",
    "keep_goal_tools",
    "same_goal",
    "tokens_used",
    "usage_tokens",
]

ALWAYS_ALLOWED_WITH_GOAL = frozenset({"get_goal", "update_goal", "todo_list", "todo_write"})
"""Tools the model keeps, and runs without approval, while a goal is active:
without them it could not report the goal's state, whatever narrowed the
tool set."""

MODEL_SETTABLE_STATUSES = MODEL_GOAL_STATUSES


def goal_active(goal: Goal | None) -> bool:
    return goal is not None and goal.status == "active"


def exempt_with_goal(goal: Goal | None, tool: str) -> bool:
    """``tool`` runs without asking approval: it is one of the
    :data:`ALWAYS_ALLOWED_WITH_GOAL` and ``goal`` is active."""
    return tool in ALWAYS_ALLOWED_WITH_GOAL and goal_active(goal)


def tokens_used(goal: Goal) -> int:
    """The goal's tokens so far (unset, in a goal never charged, is 0)."""
    return goal.tokens


def budget_exhausted(goal: Goal | None) -> bool:
    """The goal has a token budget and has used all of it."""
    return goal is not None and goal.budget_exhausted


def usage_tokens(usage: UsageTotals) -> int:
    """The tokens a turn's usage counts against a goal: prompt plus
    completion (cached prompt tokens included: the budget is what was sent)."""
    return usage.prompt_tokens + usage.completion_tokens


def charge(goal: Goal, elapsed_ms: int, tokens: int) -> Goal:
    """``goal`` with a turn's wall time and tokens added."""
    return msgspec.structs.replace(
        goal,
        time_used_ms=goal.time_used_ms + max(0, elapsed_ms),
        tokens_used=tokens_used(goal) + max(0, tokens),
    )


def charge_turn(goal: Goal, started_at: int, at: int, usage: UsageTotals, *, timed: bool) -> Goal:
    """``goal`` charged with a turn that ran while it was active, up to
    ``at`` (the turn's settling event, or the event that made the goal stop
    being active): the turn's tokens so far and, when ``timed``, the wall
    time since the later of the turn's start and the goal's creation (an
    orphaned turn is not timed: its end is the restart, and the downtime
    was no work)."""
    elapsed = at - max(started_at, goal.created_at) if timed else 0
    return charge(goal, elapsed, usage_tokens(usage))


def same_goal(a: Goal, b: Goal) -> bool:
    """The same goal, whatever its status and numbers: the resume key's
    parts (created-at and objective)."""
    return a.created_at == b.created_at and a.objective == b.objective


def keep_goal_tools(
    specs: Sequence[ToolSpec], all_specs: Sequence[ToolSpec], goal: Goal | None
) -> tuple[ToolSpec, ...]:
    """``specs`` (a narrowed tool set) with the always-allowed goal and todo
    tools of ``all_specs`` it lacks appended while ``goal`` is active (in
    ``all_specs``' order, so the same inputs always give the same bytes)."""
    if not goal_active(goal):
        return tuple(specs)
    kept = {s.name for s in specs}
    missing = (s for s in all_specs if s.name in ALWAYS_ALLOWED_WITH_GOAL and s.name not in kept)
    return (*specs, *missing)


def goal_instruction(goal: Goal | None) -> str | None:
    """The goal continuation note sent after the history of every request
    while ``goal`` is active (SPEC §7.1), else ``None``. It states the total
    budget only: live usage would change every step and break the cached
    prefix (the numbers change only when a turn settles, and the note only
    once, when the budget is spent)."""
    if goal is None or not goal_active(goal):
        return None
    lines = [
        "<thread_goal>",
        f"Objective: {goal.objective}",
        "This goal outlives the current turn: keep working toward it across turns. Do not "
        "shrink it to what fits in this turn, and do not stop at a plan, a promise or a "
        "status update.",
        "Completion audit: before calling update_goal with status complete, check the real "
        "state (files, command output, test results) against every explicit requirement. "
        "Weak, indirect or missing evidence means it is not done: keep working.",
        "Blocker audit: call update_goal with status blocked only when the same blocker has "
        "persisted for 3 goal turns in a row; a blocker met for the first time is something "
        "to work around, not to report.",
    ]
    if goal.token_budget is not None:
        lines.append(f"Token budget: {goal.token_budget} tokens in total.")
    if budget_exhausted(goal):
        lines.append(
            "The token budget is spent: start no new work. Leave the work in a consistent "
            "state, say what is done and what is left, and stop."
        )
    lines.append("</thread_goal>")
    return "\n".join(lines)


def goal_usage_line(goal: Goal) -> str:
    """What a goal has used, on one line (``kun replay``'s header)."""
    return goal.usage_line()


def describe_goal(goal: Goal) -> str:
    """The goal as ``get_goal`` and ``/goal`` show it."""
    return goal.describe()
