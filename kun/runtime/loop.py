"""The agent loop (SPEC §6.1-§6.2): one turn from the user's words to a settled
outcome, appending every step to the log and nothing else.

``run_turn`` → setup stages, drain steering, ``loop`` → settle. ``loop`` runs
``model_step`` until a step returns anything but ``CONTINUE``: "the model
called tools and they ran" continues, and so does a reply without calls that
the round-outcome decision (SPEC §7, :mod:`kun.runtime.rounds`) sends back
with a recovery instruction. A step streams the model's answer, recording
every delta as it arrives and each item once at the end, then either
dispatches the tool calls or settles the round.

Streaming one answer is :mod:`kun.runtime.answer`'s job. A step whose
stream went idle before anything of it was recorded is sent once more, with a
``stream_idle_retry`` warning so a replay shows it: nothing was said twice
and the provider may just have dropped the request. An idle timeout after
output, or a second one, fails the turn (``stream_idle_timeout``); resending
then would show the user the start of the answer twice.

Steering is never accepted and lost (:mod:`kun.runtime.steering`): steering
still unread when the turn ends otherwise than completed (a limit, a failed
stream, an interrupt) is recorded as steered user messages before the turn
settles, so the user sees it in the turn and the model reads it on the next
turn. After an interrupt that record is best effort, as the abort's own is
(:meth:`kun.runtime.service.TurnService.interrupt_turn`): the turn is
stopped whether or not it could be written.

Of the pipeline stages (SPEC §6.2) only ``pre_send`` is recorded, once per
step as its request goes out: it is the step's boundary and what a live view
waits on (the model is thinking until its first output). The other stages
found nothing to record and made up a third to a half of a log's lines; a
stage that comes to do something records what it found as its own event.
"""

from __future__ import annotations

import traceback
from collections.abc import Awaitable, Callable
from contextlib import suppress
from dataclasses import dataclass
from itertools import count

import anyio

from kun.contracts import events as ev
from kun.contracts.items import ErrorItem, UserMessage
from kun.contracts.model import ModelRequest
from kun.contracts.usage import UsageTotals
from kun.ids import new_thread_local_id
from kun.model.delegated import delegated_settings
from kun.runtime.answer import Answer, on_chunk
from kun.runtime.compact import (
    CONTEXT_OVERFLOW,
    OVERFLOW_AFTER_COMPACTION,
    compact_if_due,
    compact_now,
)
from kun.runtime.context import TurnRun, draft, usage_event
from kun.runtime.dispatch import dispatch
from kun.runtime.media import REQUEST_TOO_LARGE, drop_attachments, still_without_media
from kun.runtime.request import build_request
from kun.runtime.rounds import settle_round
from kun.store.blobs import BlobError


@dataclass(frozen=True)
class Outcome:
    """How a step or a turn ended: ``continue``, ``completed``, ``failed``,
    ``aborted``."""

    status: str
    stop_reason: str | None = None
    code: str | None = None
    message: str | None = None
    silent: bool = False
    """The step failed before anything of its answer was recorded."""


CONTINUE = Outcome("continue")
ABORTED = Outcome("aborted")
IDLE_TIMEOUT = "stream_idle_timeout"
IDLE_RETRY = "stream_idle_retry"
STORM_STOPPED = "tool_storm_stopped"


async def run_turn(
    run: TurnRun, resume: Callable[[TurnRun], Awaitable[None]] | None = None
) -> Outcome:
    """Run the turn to its outcome; the caller settles it. Never raises but
    for cancellation from outside the turn's own scope. ``resume`` first
    finishes the step a re-armed turn waited in (:mod:`kun.runtime.rearm`).
    A thread whose provider runs whole turns (SPEC §9) hands the turn to it
    (:mod:`kun.runtime.agent_sdk.engine`)."""
    delegated = delegated_settings(run.model)
    if delegated is not None:
        from kun.runtime.agent_sdk.engine import run_delegated_turn  # it imports this module

        return await run_delegated_turn(run, delegated)
    outcome = Outcome("failed", code="internal_error", message="the turn did not finish")
    with run.scope:
        try:
            if resume is not None:
                await resume(run)
            await drain_steering(run)
            outcome = await loop(run)
            if outcome.status != "completed" and not run.aborted:
                await record_unread_steering(run)
        except BlobError as exc:
            outcome = Outcome("failed", code="side_file_unreadable", message=str(exc))
        except Exception as exc:
            outcome = Outcome("failed", code="internal_error", message=_enriched(run, exc))
    if run.scope.cancelled_caught or run.aborted:
        with suppress(Exception):
            await record_unread_steering(run)
        return ABORTED
    return outcome


async def loop(run: TurnRun) -> Outcome:
    for step in count():
        if run.aborted:
            return ABORTED
        limit = check_limits(run, step)
        if limit is not None:
            return limit
        await drain_steering(run)
        result = await compacting_step(run, step)
        if result is CONTINUE or (
            result.status == "completed" and not run.steering.close_if_empty()
        ):
            continue
        return result
    raise AssertionError("unreachable")  # pragma: no cover


def check_limits(run: TurnRun, step: int) -> Outcome | None:
    limits = run.limits
    if limits.max_steps is not None and step >= limits.max_steps:
        return Outcome(
            "failed",
            code="turn_step_limit",
            message=f"the turn reached {limits.max_steps} steps (max_steps)",
        )
    if anyio.current_time() - run.started_at > limits.max_wall_seconds:
        return Outcome(
            "failed",
            code="turn_wall_time_limit",
            message=f"the turn ran longer than {limits.max_wall_seconds:.0f} s",
        )
    usage = _turn_usage(run)
    budget = limits.cost_budget_usd
    if budget is not None and usage.cost_usd >= budget:
        return Outcome(
            "failed",
            code="budget_exhausted",
            message=f"the turn's cost budget of ${budget:g} is spent",
        )
    tokens = limits.max_turn_tokens
    used = usage.prompt_tokens + usage.completion_tokens
    if tokens is not None and used >= tokens:
        return Outcome(
            "failed",
            code="turn_token_limit",
            message=f"the turn used {used:,} tokens, its limit is {tokens:,} (max_turn_tokens)",
        )
    return None


def _turn_usage(run: TurnRun) -> UsageTotals:
    """What this turn has used so far. Its cost counts its priced calls
    only: a call whose price is unknown adds nothing it could be held to."""
    turn = next((t for t in run.state().turns if t.turn_id == run.turn_id), None)
    return turn.usage if turn is not None else UsageTotals()


async def drain_steering(run: TurnRun) -> None:
    await _steered(run, run.steering.drain())


async def record_unread_steering(run: TurnRun) -> None:
    """Seal the queue and record what the model will not read in this turn."""
    await _steered(run, run.steering.close())


async def _steered(run: TurnRun, entries: list[str]) -> None:
    if entries:
        items = [
            UserMessage(id=new_thread_local_id("msg"), text=text, steered=True) for text in entries
        ]
        await run.write(*(draft(ev.ItemCompleted, run.turn_id, item=item) for item in items))


async def compacting_step(run: TurnRun, step: int) -> Outcome:
    """A model step with compaction around it (:mod:`kun.runtime.compact`):
    compacted first when the prompt is estimated too large, and, after a
    context overflow, compacted once and sent again; a body refused as too
    large is sent once more without its attachments (:mod:`kun.runtime.media`).
    The tool list is re-read first (an MCP server may have announced a new
    one): it changes between steps only, never under a request."""
    if await run.tools.refresh():
        run.tool_specs = run.catalogue()
    request = build_request(run, run.state())
    if await compact_if_due(run, request, step):
        request = build_request(run, run.state())
    request = still_without_media(run, request)
    result = await patient_step(run, step, request)
    if result.code == REQUEST_TOO_LARGE:
        bare = await drop_attachments(run, request, result.message or REQUEST_TOO_LARGE)
        return result if bare is None else await patient_step(run, step, bare)
    if result.code != CONTEXT_OVERFLOW:
        return result
    why_not = await compact_now(run, step)
    if why_not is not None:
        return _overflow(f"{result.message}; it could not be compacted: {why_not}")
    result = await patient_step(run, step, build_request(run, run.state()))
    if result.code == CONTEXT_OVERFLOW:
        return _overflow(f"{result.message} (again, after the history was compacted)")
    return result


def _overflow(detail: str) -> Outcome:
    return Outcome(
        "failed",
        code=OVERFLOW_AFTER_COMPACTION,
        message=f"The conversation does not fit the model's context window: {detail}. "
        "Start a new thread, or fork this one from an earlier point.",
    )


async def patient_step(run: TurnRun, step: int, request: ModelRequest) -> Outcome:
    """A model step sent once more if its stream went idle before any of it
    was recorded (see the module docstring)."""
    result = await model_step(run, step, request)
    if result.code != IDLE_TIMEOUT or not result.silent or run.aborted:
        return result
    message = f"{result.message}; nothing had arrived, so the step is sent once more"
    await run.write(draft(ev.WarningEvent, run.turn_id, code=IDLE_RETRY, message=message))
    return await model_step(run, step, request)


async def model_step(run: TurnRun, step: int, request: ModelRequest | None = None) -> Outcome:
    if request is None:
        request = build_request(run, run.state())
    await run.write(draft(ev.PipelineStage, run.turn_id, stage="pre_send", step=step))
    answer = Answer()
    async for chunk in run.model.stream(request):
        await on_chunk(run, answer, chunk)
    calls = answer.tool_calls()
    closing: list[ev.Event] = [
        *(draft(ev.ItemCompleted, run.turn_id, item=item) for item in answer.items()),
        *(draft(ev.ItemCreated, run.turn_id, item=call) for call in calls),
        *(usage_event(run, usage, step) for usage in answer.usage),
    ]
    # With calls, the batch rides on the durable write dispatch makes before
    # any tool can run (see kun.runtime.dispatch); without, the turn ends.
    await run.write(*closing, durable=not calls)
    if answer.error is not None:
        error = answer.error
        return Outcome("failed", code=error.code, message=error.message, silent=not answer.streamed)
    if calls:
        if len(calls) > run.limits.max_tool_calls_per_step:
            return Outcome(
                "failed",
                code="turn_tool_call_limit",
                message=f"the model asked for {len(calls)} tool calls in one step "
                f"(limit {run.limits.max_tool_calls_per_step})",
            )
        await dispatch(run, calls)
        if run.aborted:
            return ABORTED
        storm = run.storm.stop_reason()
        if storm is not None:
            return Outcome("failed", code=STORM_STOPPED, message=storm)
        return CONTINUE
    verdict = await settle_round(run, "".join(answer.text), answer.stop_reason or "stop")
    if verdict.status == "continue":
        return ABORTED if run.aborted else CONTINUE
    if verdict.status == "failed":
        return Outcome("failed", code=verdict.code, message=verdict.message)
    return Outcome("completed", stop_reason=answer.stop_reason)


def settle_events(run: TurnRun, outcome: Outcome) -> list[ev.Event]:
    """The events that settle the turn with ``outcome`` (not for aborts,
    which the TurnService records when it interrupts)."""
    if outcome.status == "completed":
        return [draft(ev.TurnCompleted, run.turn_id, stop_reason=outcome.stop_reason)]
    code = outcome.code or "error"
    message = outcome.message or code
    error = ErrorItem(id=new_thread_local_id("err"), code=code, message=message)
    return [
        draft(ev.ItemCompleted, run.turn_id, item=error),
        draft(ev.TurnFailed, run.turn_id, code=code, message=message),
    ]


def _enriched(run: TurnRun, exc: BaseException) -> str:
    stack = traceback.format_exception(exc)[-4:-1]
    lines = " | ".join(line.strip().replace("\n", " ") for line in stack)[:600]
    return (
        f"[kun turn failed] turn={run.turn_id} thread={run.thread_id} "
        f"model={run.model.model} provider={run.model.provider} "
        f"error={type(exc).__name__}: {exc} stack={lines}"
    )


__all__ = [
    "CONTINUE",
    "Outcome",
    "build_request",
    "compacting_step",
    "loop",
    "model_step",
    "patient_step",
    "run_turn",
]
