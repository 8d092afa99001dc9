"""A side thread's questions, shown in its parent's turn (issue: sub-agents
are answerable where their parent is).

A sub-agent's approval or question is recorded in its own log, where its
turn waits for it, and a copy (``side_thread`` set, same id) in the parent's
running turn: the terminal, the API's stream and the web view follow the
parent, so they show it and answer the id, and the answer wakes the side
thread's gate (one gate serves every thread of the service). The copy's
resolution follows when the side thread's wait ends, answered or not, so the
parent never shows a question that is no longer asked. A copy that cannot be
written (the parent's turn ended) costs the side thread nothing: its own
log holds the truth.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
from msgspec.structs import replace

from kun.contracts import events as ev
from kun.runtime.context import TurnRun, draft
from kun.tools.base import ToolOutput

__all__ = ["NOT_FOR_AGENT", "mirrored", "refuse_outside_link"]

_log = logging.getLogger(__name__)
_SHIELD_SECONDS = 10.0
NOT_FOR_AGENT = "not_allowed_for_agent"


@asynccontextmanager
async def mirrored(
    run: TurnRun, requested: ev.ApprovalRequested | ev.UserInputRequested
) -> AsyncIterator[list[ev.Event]]:
    """Show ``requested`` in the parent's turn while the block waits for its
    answer; the block appends the answer's event to the list it is given,
    and without one (cancelled) the copy is resolved ``cancelled``."""
    if run.mirror is None:
        yield []
        return
    await _show(run, replace(requested, side_thread=run.thread_id))
    answer: list[ev.Event] = []
    try:
        yield answer
    finally:
        with anyio.move_on_after(_SHIELD_SECONDS, shield=True):
            await _show(run, answer[0] if answer else _cancelled(requested))


def _cancelled(requested: ev.ApprovalRequested | ev.UserInputRequested) -> ev.Event:
    if isinstance(requested, ev.ApprovalRequested):
        resolved: ev.Event = draft(
            ev.ApprovalResolved, approval_id=requested.approval_id, decision="cancelled"
        )
    else:
        resolved = draft(ev.UserInputResolved, request_id=requested.request_id, status="cancelled")
    return resolved


async def _show(run: TurnRun, event: ev.Event) -> None:
    assert run.mirror is not None
    try:
        await run.mirror(event)
    except Exception:
        _log.exception("showing a question of side thread %s in its parent failed", run.thread_id)


def refuse_outside_link(run: TurnRun, name: str) -> ToolOutput | None:
    """An error result for a side thread's call of a tool its link does not
    give it (a model may call a tool it was not offered); ``None`` when the
    call may go on."""
    if run.link is None or name in run.link.tools:
        return None
    allowed = ", ".join(sorted(run.link.tools)) or "none"
    return ToolOutput(
        output=f"{name} is not available to this sub-agent; its tools are: {allowed}. "
        "Use those, or say in your answer what else is needed.",
        is_error=True,
        code=NOT_FOR_AGENT,
    )
