"""A compaction the user asked for (``/compact``, ``POST …/compact``,
``kun compact``): recorded as its own short turn, so every item stays inside
a turn and rewind, fork and replay treat it like any other.

The turn has no user message: ``turn_started``, the summariser's usage, the
``compaction`` item, then ``turn_completed`` with the stop reason
:data:`COMPACTED`. Hiding that turn (a rewind) takes the summary back. It is
refused while another turn runs (it would summarise under a running step),
and not started when there is nothing to summarise
(:func:`kun.domain.compaction.plan_compaction`), so a thread never gets an
empty compaction turn. It runs like a turn: in the service's task group,
interruptible, waited for with ``wait_turn``. A summary that cannot be
written fails the turn with :data:`COMPACTION_FAILED`.
"""

from __future__ import annotations

from kun.runtime.compact import compact_now
from kun.runtime.context import TurnRun
from kun.runtime.loop import ABORTED, Outcome

__all__ = ["COMPACTED", "COMPACTION_FAILED", "NOTHING_TO_COMPACT", "run_compaction"]

COMPACTED = "compacted"
"""The stop reason of a compaction turn."""

COMPACTION_FAILED = "compaction_failed"

NOTHING_TO_COMPACT = "there is no earlier history to summarise yet"


async def run_compaction(run: TurnRun) -> Outcome:
    """The body of a compaction turn; the caller settles it. Never raises
    but for cancellation from outside the turn's own scope."""
    outcome = Outcome("failed", code="internal_error", message="the compaction did not finish")
    with run.scope:
        try:
            why_not = await compact_now(run, 0)
        except Exception as exc:
            why_not = f"{type(exc).__name__}: {exc}"
        if why_not is None:
            outcome = Outcome("completed", stop_reason=COMPACTED)
        else:
            outcome = Outcome(
                "failed",
                code=COMPACTION_FAILED,
                message=f"The history could not be compacted: {why_not}.",
            )
    if run.scope.cancelled_caught or run.aborted:
        return ABORTED
    return outcome
