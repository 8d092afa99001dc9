"""The loop's side of the round-outcome decisions (SPEC §7): gather the facts
of a step that called no tools, let :func:`kun.domain.recovery.decide`
choose, record the decision's warning, and tell the loop what to do.

The decision itself is pure (:mod:`kun.domain.recovery`); this module only
reads the thread's state for the facts and writes the one ``warning`` event,
so a replay shows why the turn went on, stopped or failed, and the next
request is rebuilt from the log (:func:`kun.domain.recovery.pending_recovery`).
"""

from __future__ import annotations

from typing import Literal

from kun.contracts import events as ev
from kun.contracts.items import ToolResult
from kun.domain.recovery import (
    Continue,
    Fail,
    FinalAnswer,
    RoundFacts,
    decide,
    warning_of,
)
from kun.domain.state import ThreadState
from kun.runtime.context import TurnRun, draft

__all__ = ["RoundVerdict", "round_facts", "settle_round"]

PLAN_TOOL = "create_plan"
"""A plan's artefacts are not the workspace's files changing."""


class RoundVerdict:
    """What the loop does next: ``continue`` (another step), ``completed``,
    or ``failed`` with ``code`` and ``message``."""

    __slots__ = ("code", "message", "status")

    def __init__(
        self,
        status: Literal["continue", "completed", "failed"],
        code: str | None = None,
        message: str | None = None,
    ) -> None:
        self.status = status
        self.code = code
        self.message = message


def round_facts(run: TurnRun, state: ThreadState, text: str, stop_reason: str) -> RoundFacts:
    """The facts of a reply without tool calls. No soft-required tool yet:
    plan mode, the only source of one, is not built."""
    turn = next((t for t in state.turns if t.turn_id == run.turn_id), None)
    results = [i for i in turn.items if isinstance(i, ToolResult)] if turn is not None else []
    goal = state.settings.goal
    return RoundFacts(
        text=text,
        stop_reason=stop_reason,
        changed_files=any(r.diff and r.name != PLAN_TOOL for r in results),
        goal_active=goal is not None and goal.status == "active",
        tool_failed=bool(results) and results[-1].is_error,
    )


async def settle_round(run: TurnRun, text: str, stop_reason: str) -> RoundVerdict:
    """Decide the round, record its warning if it has one, and say what
    follows. A soft-required tool's resolver (plan mode) does not exist yet,
    so :class:`~kun.domain.recovery.ResolveSoftRequired` stops like ``Stop``."""
    facts = round_facts(run, run.state(), text, stop_reason)
    decision, run.recovery = decide(facts, run.recovery)
    warning = warning_of(decision)
    if warning is not None:
        code, message = warning
        await run.write(draft(ev.WarningEvent, run.turn_id, code=code, message=message))
    if isinstance(decision, Continue | FinalAnswer):
        return RoundVerdict("continue")
    if isinstance(decision, Fail):
        return RoundVerdict("failed", code=decision.code, message=decision.message)
    return RoundVerdict("completed")
