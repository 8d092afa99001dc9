"""The user's moves on a thread's goal (SPEC §7.1), as ``/goal`` makes
them: set one (replacing any), pause, resume, complete, change or drop its
token budget, clear it. The model may only report a goal complete or
blocked; a move its status does not allow is refused with the session's
words."""

from __future__ import annotations

import msgspec

from kun.app.local_errors import GoalRefused, NoGoal
from kun.contracts.threads import Goal, GoalStatus

__all__ = ["MOVES", "changed_goal"]

MOVES: dict[GoalStatus, tuple[str, tuple[GoalStatus, ...]]] = {
    "paused": ("pause", ("active",)),
    "active": ("resume", ("paused", "blocked")),
    "complete": ("done", ("active", "paused", "blocked")),
}
"""The status a move gives: its ``/goal`` word and the statuses it moves from."""


def changed_goal(
    goal: Goal | None,
    *,
    status: GoalStatus | None,
    token_budget: int | None,
    clear_budget: bool,
    clear: bool,
) -> Goal | None:
    """``goal`` after the change (``None``: cleared); :class:`NoGoal` when
    there is none to change, :class:`GoalRefused` for a move its status
    does not allow."""
    if clear:
        if goal is None:
            raise NoGoal("no goal to clear")
        return None
    if status is not None:
        if status not in MOVES:
            raise GoalRefused(f"a goal cannot be set {status} by hand")
        word, sources = MOVES[status]
        if goal is None:
            raise NoGoal(f"no goal to {word} (set one: /goal TEXT)")
        if goal.status not in sources:
            raise GoalRefused(f"the goal is {goal.status}; /goal {word} needs it {sources[0]}")
        goal = msgspec.structs.replace(goal, status=status)
    if token_budget is not None or clear_budget:
        if goal is None:
            raise NoGoal("no goal to budget (set one: /goal TEXT)")
        goal = msgspec.structs.replace(goal, token_budget=None if clear_budget else token_budget)
    return goal
