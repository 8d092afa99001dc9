"""The loop's side of the round-outcome decisions (SPEC §7): gather the facts
of a step that called no tools, let :func:`kun.domain.recovery.decide`
choose, record the decision's warning, and tell the loop what to do.

The decision itself is pure (:mod:`kun.domain.recovery`); this module only
reads the thread's state for the facts and writes the one ``warning`` event,
so a replay shows why the turn went on, stopped or failed, and the next
request is rebuilt from the log (:func:`kun.domain.recovery.pending_recovery`).

Plan mode's soft-required ``create_plan`` (SPEC §7.5): a reply in prose
instead of the call is materialised here into a synthetic ``create_plan``
call, dispatched like the model's own (``item_created``, the ledger, the
result), so a replay shows the plan, where it came from, and its result.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from kun.contracts import events as ev
from kun.contracts.items import ToolCall, ToolResult
from kun.domain.plan_mode import has_plan, plan_title
from kun.domain.recovery import (
    Continue,
    Fail,
    FinalAnswer,
    ResolveSoftRequired,
    RoundFacts,
    decide,
    warning_of,
)
from kun.domain.state import ThreadState
from kun.ids import new_thread_local_id
from kun.runtime.context import TurnRun, draft
from kun.runtime.dispatch import dispatch_own

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
    """The facts of a reply without tool calls. A plan-mode turn without a
    plan yet has ``create_plan`` soft-required."""
    turn = next((t for t in state.turns if t.turn_id == run.turn_id), None)
    results = [i for i in turn.items if isinstance(i, ToolResult)] if turn is not None else []
    goal = state.settings.goal
    plan_missing = turn is not None and turn.plan_mode and not has_plan(turn.items)
    return RoundFacts(
        text=text,
        stop_reason=stop_reason,
        soft_required_tool=PLAN_TOOL if plan_missing else None,
        changed_files=any(r.diff and r.name != PLAN_TOOL for r in results),
        goal_active=goal is not None and goal.status == "active",
        tool_failed=bool(results) and results[-1].is_error,
    )


async def settle_round(run: TurnRun, text: str, stop_reason: str) -> RoundVerdict:
    """Decide the round, record its warning if it has one, and say what
    follows."""
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
    if isinstance(decision, ResolveSoftRequired):
        return await materialize_plan(run, text)
    return RoundVerdict("completed")


async def materialize_plan(run: TurnRun, text: str) -> RoundVerdict:
    """Record the reply ``text`` as the turn's plan through a synthetic
    ``create_plan`` call, titled from the prose (:func:`plan_title`); the
    ``plan`` item says it came from the reply. The call is kun's own, so it
    is never put to the approval policy. The reply was the model's answer,
    so the turn completes once the plan is recorded; a plan that could not
    be leaves the required tool missing."""
    item_id = new_thread_local_id("call")
    arguments = msgspec.json.encode({"summary": plan_title(text), "markdown": text})
    call = ToolCall(
        id=item_id,
        status="in_progress",
        call_id=item_id,
        name=PLAN_TOOL,
        arguments=msgspec.Raw(arguments),
    )
    await run.write(draft(ev.ItemCreated, run.turn_id, item=call), durable=False)
    await dispatch_own(run, call)
    if run.aborted:
        return RoundVerdict("completed")
    result = _result_of(run, item_id)
    if result is None or result.is_error:
        why = result.output if result is not None else "no result"
        message = f"the plan in the model's reply could not be recorded: {why}"
        return RoundVerdict("failed", code="required_tool_missing", message=message)
    return RoundVerdict("completed")


def _result_of(run: TurnRun, call_id: str) -> ToolResult | None:
    turn = next((t for t in run.state().turns if t.turn_id == run.turn_id), None)
    if turn is None:
        return None
    results = (i for i in turn.items if isinstance(i, ToolResult) and i.call_id == call_id)
    return next(results, None)
