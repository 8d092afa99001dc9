"""Context compaction in the loop (issue 12, item 1): when to summarise the
history, and recording the summary as a ``compaction`` item of the running
turn. What the summary stands for, and how a request is built around it, is
the pure part (:mod:`kun.domain.compaction`).

Two triggers. Before a step, when the estimated prompt fills more than
``compact_at`` of the model's context window (:func:`compact_if_due`): the
estimate is crude, so this is the cheap, early path. After the provider
answered a step with a context-overflow error (:func:`compact_now`): the
loop compacts once without asking the estimate and sends the step again; if
that overflows too, or there is nothing left to summarise, the turn fails
with :data:`OVERFLOW_AFTER_COMPACTION` rather than retrying for ever.

The summary is written by the same model client, with a dedicated request
and no tools; its usage is recorded like a step's, so the thread's cost is
exact. Nothing of the summariser's stream is recorded but the finished
item: a summary that failed leaves no trace in the history but a warning.
A summarising request the provider refuses is sent once more: without its
attachments after a 413, as a step's is (:mod:`kun.runtime.media`); with the
older half of its history left out after a context overflow (without a
known window the summariser gets the very history that just overflowed).
"""

from __future__ import annotations

from collections.abc import Sequence

from kun.contracts import events as ev
from kun.contracts.items import Item
from kun.contracts.model import ErrorChunk, ModelRequest, TextDeltaChunk, UsageChunk
from kun.domain.compaction import (
    compaction_item,
    estimate_request_tokens,
    item_tokens,
    plan_compaction,
    should_compact,
    summary_request,
)
from kun.ids import new_thread_local_id
from kun.runtime.context import TurnRun, draft, usage_event
from kun.runtime.media import REQUEST_TOO_LARGE, drop_attachments

__all__ = [
    "CONTEXT_OVERFLOW",
    "OVERFLOW_AFTER_COMPACTION",
    "SUMMARY_MAX_TOKENS",
    "SUMMARY_TRIMMED",
    "compact_if_due",
    "compact_now",
]

CONTEXT_OVERFLOW = "context_overflow"
"""The code :mod:`kun.model.classify` gives a prompt the model's window
cannot hold."""

OVERFLOW_AFTER_COMPACTION = "context_overflow_after_compaction"

SUMMARY_TRIMMED = "compaction_input_trimmed"
"""The warning of a summarising request sent again with its oldest items
left out, after it overflowed the context window itself."""

SUMMARY_MAX_TOKENS = 8192
"""The summary's output budget: the five sections of the prompt, with room
to spare, and small next to any window worth compacting."""


async def compact_if_due(run: TurnRun, request: ModelRequest, step: int) -> bool:
    """Trigger (a): compact when ``request`` is estimated over the
    threshold. Returns whether a compaction was recorded (the caller then
    rebuilds the request). Without a known window, never."""
    if run.context_window is None:
        return False
    if not should_compact(estimate_request_tokens(request), run.context_window, run.compact_at):
        return False
    return await compact_now(run, step) is None


async def compact_now(run: TurnRun, step: int) -> str | None:
    """Summarise what can be summarised now and record it; ``None`` when a
    compaction was recorded, else why not (for the turn's error message,
    and as a warning)."""
    plan = plan_compaction(run.state().visible_turns)
    if plan is None:
        return "there is no earlier history left to summarise"
    window = run.context_window
    context = run.context
    items = plan.items if run.side_files is None else run.side_files.resolve(plan.items)
    system_prompt = context.system_prompt if context is not None else run.system_prompt
    request = summary_request(
        items,
        system_prompt=system_prompt,
        budget_tokens=int(window * run.compact_at) if window is not None else None,
        max_tokens=SUMMARY_MAX_TOKENS,
    )
    text, usage, error = await _summarise(run, request, step)
    if error is not None and error.code in (REQUEST_TOO_LARGE, CONTEXT_OVERFLOW):
        if usage:
            await run.write(*usage)
            usage = []
        again = await _resend(run, request, items, system_prompt, error)
        if again is not None:
            text, usage, error = await _summarise(run, again, step)
    summary = "".join(text)
    if error is None and summary.strip():
        item = compaction_item(new_thread_local_id("cmp"), summary, plan)
        await run.write(*usage, draft(ev.ItemCompleted, run.turn_id, item=item))
        return None
    reason = (
        f"the summarising request failed ({error.code}: {error.message})"
        if error is not None
        else "the model wrote an empty summary"
    )
    warning = draft(
        ev.WarningEvent,
        run.turn_id,
        code="compaction_failed",
        message=f"The history could not be compacted: {reason}.",
    )
    await run.write(*usage, warning)
    return reason


async def _resend(
    run: TurnRun,
    request: ModelRequest,
    items: Sequence[Item],
    system_prompt: str,
    error: ErrorChunk,
) -> ModelRequest | None:
    """The summarising request to send once more after ``error``, with a
    warning saying why, or ``None``: after a 413 without its attachments
    (:mod:`kun.runtime.media`); after a context overflow (the window is
    unknown or the estimate was wrong) with the older half of its history
    left out, by the estimate, so the latest history is summarised."""
    if error.code == REQUEST_TOO_LARGE:
        return await drop_attachments(run, request, error.message or REQUEST_TOO_LARGE)
    smaller = summary_request(
        items,
        system_prompt=system_prompt,
        budget_tokens=estimate_request_tokens(request) - sum(map(item_tokens, items)) // 2,
        max_tokens=SUMMARY_MAX_TOKENS,
    )
    left_out = len(request.history) - len(smaller.history)
    if left_out <= 0 or len(smaller.history) < 2:
        return None
    warning = draft(
        ev.WarningEvent,
        run.turn_id,
        code=SUMMARY_TRIMMED,
        message=f"The summarising request did not fit the context window either "
        f"({error.message}); it was sent again without the {left_out} oldest items.",
    )
    await run.write(warning)
    return smaller


async def _summarise(
    run: TurnRun, request: ModelRequest, step: int
) -> tuple[list[str], list[ev.Event], ErrorChunk | None]:
    """The summariser's text, its usage events (not yet recorded) and its
    error, if any."""
    text: list[str] = []
    usage: list[ev.Event] = []
    error: ErrorChunk | None = None
    async for chunk in run.model.stream(request):
        if isinstance(chunk, TextDeltaChunk):
            text.append(chunk.text)
        elif isinstance(chunk, UsageChunk):
            usage.append(usage_event(run, chunk, step))
        elif isinstance(chunk, ErrorChunk):
            error = chunk
    return text, usage, error
