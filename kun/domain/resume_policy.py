"""Cross-turn goal resume (SPEC §7.4): what to do once a turn has settled.

Pure: every answer is derived from the thread's projection, so a restarted
process reaches the same attempt count as the one that died (nothing is
remembered in memory). A resumed turn is marked on its user message
(``UserMessage.goal_resume``, the attempt number), which is also what
``kun replay`` shows as the reason the turn started.

Progress is a successful tool call other than the goal tools: reading or
re-stating the goal is not work. A resumed turn that made no progress counts
one attempt; progress, or a turn the user started, ends the count.

A turn kun itself stopped as a runaway (:data:`RUNAWAY_CODES`: the storm
breaker, the step, token, cost or wall limit) blocks the goal at once rather
than counting as one more attempt: its calls may have "succeeded" (the same
read, over and over), so it would look like progress and be resumed without
end, and each resume would spend a whole new turn's limit (five resumes of a
200-step turn are a thousand model calls). The limits bound a turn; the
goal must not multiply them.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from kun.contracts.items import ToolResult, UserMessage, WarningItem
from kun.contracts.threads import Goal
from kun.domain.goals import budget_exhausted
from kun.domain.state import ThreadState, TurnState
from kun.domain.transcript import plural

__all__ = [
    "BLOCK_CODES",
    "GOAL_TOOLS",
    "RUNAWAY_BLOCK_CODE",
    "RUNAWAY_CODES",
    "WORKSPACE_MISSING_CODE",
    "Block",
    "Decision",
    "GoalKey",
    "NoResume",
    "ResumeSettings",
    "Schedule",
    "attempts_without_progress",
    "backoff_seconds",
    "decide_after_turn",
    "goal_key",
    "made_progress",
    "resume_attempt",
    "resume_text",
    "still_resumable",
    "workspace_missing_block",
]

GOAL_TOOLS = frozenset({"get_goal", "create_goal", "update_goal"})
"""Calls that do not count as progress."""

REPETITION_STOP = "goal_repetition_stop"
BLOCKED_CODE = "goal_resume_exhausted"
WORKSPACE_MISSING_CODE = "goal_resume_workspace_missing"
RUNAWAY_BLOCK_CODE = "goal_runaway_stopped"
BLOCK_CODES = frozenset({BLOCKED_CODE, WORKSPACE_MISSING_CODE, RUNAWAY_BLOCK_CODE})
"""The warnings that say why kun blocked a goal itself."""

RUNAWAY_CODES = frozenset(
    {
        "tool_storm_stopped",
        "turn_step_limit",
        "turn_token_limit",
        "turn_wall_time_limit",
        "budget_exhausted",
    }
)
"""The failure codes of a turn kun stopped because it ran away (SPEC §7.3)."""

GoalKey = tuple[str, int, str]
"""Thread id, the goal's ``created_at`` and its objective: a timer is only
honoured for the goal it was set for."""


class ResumeSettings(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """The backoff: ``base_seconds`` * 2**(attempt-1), at most ``cap_seconds``;
    after ``max_attempts`` resumed turns without progress the goal is blocked
    (the resume prompt's "N/M" counts up to it). The defaults are the SPEC's;
    ``[runtime] goal_resume_base_seconds``, ``goal_resume_max_seconds`` and
    ``goal_resume_max_attempts`` replace them
    (:func:`kun.app.session.resume_settings`)."""

    base_seconds: float = 2.0
    cap_seconds: float = 60.0
    max_attempts: int = 5


class NoResume(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """Nothing is scheduled; ``clear`` also drops a pending resume (no
    active goal any more)."""

    reason: Literal["no_active_goal", "aborted", "plan_mode", "budget_exhausted", "repetition"]
    clear: bool = False


class Schedule(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    key: GoalKey
    attempt: int
    delay_seconds: float
    disable_user_input: bool


class Block(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """The goal becomes ``goal`` (blocked); ``message`` explains why."""

    goal: Goal
    code: str
    message: str


Decision = NoResume | Schedule | Block


def goal_key(thread_id: str, goal: Goal) -> GoalKey:
    return (thread_id, goal.created_at, goal.objective)


def backoff_seconds(attempt: int, settings: ResumeSettings) -> float:
    """The wait before resume ``attempt`` (1-based)."""
    exponent = max(0, attempt - 1)
    if exponent > 60:  # 2**61 seconds is past any cap; keep the float finite
        return settings.cap_seconds
    return min(settings.cap_seconds, settings.base_seconds * float(2**exponent))


def made_progress(turn: TurnState) -> bool:
    return any(
        isinstance(item, ToolResult)
        and item.status == "completed"
        and not item.is_error
        and item.name not in GOAL_TOOLS
        for item in turn.items
    )


def resume_attempt(turn: TurnState) -> int:
    """The attempt number of a resumed turn, 0 for a turn the user started."""
    for item in turn.items:
        if isinstance(item, UserMessage) and not item.steered:
            return item.goal_resume
    return 0


def attempts_without_progress(state: ThreadState, goal: Goal) -> int:
    """Resumed turns of ``goal`` since the last progress or user turn."""
    count = 0
    for turn in reversed(state.visible_turns):
        if turn.started_at < goal.created_at or made_progress(turn):
            break
        if resume_attempt(turn) == 0:
            break
        count += 1
    return count


def _repetition_stopped(turn: TurnState) -> bool:
    return any(isinstance(i, WarningItem) and i.code == REPETITION_STOP for i in turn.items)


def decide_after_turn(
    state: ThreadState,
    turn: TurnState,
    *,
    aborted: bool,
    settings: ResumeSettings | None = None,
) -> Decision:
    """The resume decision for ``turn``, which has just settled (``aborted``:
    it was interrupted, whatever the log says yet)."""
    settings = settings or ResumeSettings()
    goal = state.settings.goal
    if goal is None or goal.status != "active":
        return NoResume(reason="no_active_goal", clear=True)
    if aborted or turn.status == "aborted":
        return NoResume(reason="aborted")
    if turn.plan_mode:
        return NoResume(reason="plan_mode")
    if budget_exhausted(goal):
        return NoResume(reason="budget_exhausted")
    if _repetition_stopped(turn) and not made_progress(turn):
        return NoResume(reason="repetition")
    if turn.status == "failed" and turn.error is not None and turn.error.code in RUNAWAY_CODES:
        return Block(
            goal=msgspec.structs.replace(goal, status="blocked"),
            code=RUNAWAY_BLOCK_CODE,
            message=(
                f"goal blocked: kun stopped the turn ({turn.error.code}), so it did not resume the "
                "goal: a resumed turn would run into the same limit again; set it "
                "active again to retry"
            ),
        )
    attempt = attempts_without_progress(state, goal) + 1
    if attempt > settings.max_attempts:
        return Block(
            goal=msgspec.structs.replace(goal, status="blocked"),
            code=BLOCKED_CODE,
            message=(
                f"goal blocked: {plural(settings.max_attempts, 'resumed turn')} in a row made no "
                "progress (no successful tool call besides the goal tools); set it "
                "active again to retry"
            ),
        )
    return Schedule(
        key=goal_key(state.thread_id, goal),
        attempt=attempt,
        delay_seconds=backoff_seconds(attempt, settings),
        disable_user_input=turn.disable_user_input,
    )


def workspace_missing_block(thread_id: str, goal: Goal, workspace: str) -> Block:
    """A resume that could not start because the thread's workspace is not
    a folder here (an imported thread, a moved or deleted checkout): kun
    would try again on every turn's end and fail the same way, so the goal
    is blocked until a person gives the thread a workspace."""
    return Block(
        goal=msgspec.structs.replace(goal, status="blocked"),
        code=WORKSPACE_MISSING_CODE,
        message=(
            f"goal blocked: the thread's workspace {workspace} does not exist here, so kun "
            f"could not resume it; kun resume {thread_id} --workspace DIR gives it one "
            f'(over HTTP: PATCH /v1/threads/{thread_id} with {{"workspace": DIR}}), '
            "then /goal resume sets the goal active again"
        ),
    )


def still_resumable(state: ThreadState, key: GoalKey) -> bool:
    """When the timer fires: the same goal, still active, within budget, and
    no turn open."""
    goal = state.settings.goal
    return (
        goal is not None
        and goal.status == "active"
        and goal_key(state.thread_id, goal) == key
        and not budget_exhausted(goal)
        and all(t.settled for t in state.turns)
    )


def resume_text(attempt: int, settings: ResumeSettings | None = None) -> str:
    """The resumed turn's prompt."""
    settings = settings or ResumeSettings()
    return (
        f"[goal resume {attempt}/{settings.max_attempts}] Continue working toward the "
        "active goal. If it is done, call update_goal with status complete; if you "
        "cannot make progress, call update_goal with status blocked and say why."
    )
