"""Settling turns whose process died: the events that say so (SPEC §5).

A turn still open in a log whose writer is gone is failed with code
``orphaned``. A tool call that had started and never finished gets a result
saying its side effects may or may not have happened (the model reads it; the
user sees it) and is settled ``unknown_after_crash``: it is never silently
re-run. If the crash cut a step's tool calls short, the calls of that step
that never started get a result saying they did not run (code
``not_run_after_crash``): the model is shown a block of calls only when every
call has its result (SPEC §8.3), so without it the whole step, the
``unknown_after_crash`` result and the results of calls that did run
included, would vanish from what the model is told. A step whose dispatch had
not begun (its stream was cut, or none of its calls had started, been
answered or asked for approval) is left as an interrupted step is: its calls
are failed and the model does not see them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from kun.contracts import events as ev
from kun.contracts.items import (
    Approval,
    AssistantReasoning,
    AssistantText,
    ErrorItem,
    Item,
    ToolCall,
    ToolResult,
)
from kun.domain.state import ThreadState, TurnState
from kun.ids import new_thread_local_id
from kun.runtime.context import draft

UNKNOWN_AFTER_CRASH = (
    "kun stopped while this tool was running, so its effects may or may not have "
    "happened. Check the current state before running it again."
)
NOT_RUN_AFTER_CRASH = (
    "kun stopped before this tool call started, so it did not run. Run it again if "
    "it is still needed."
)
ORPHANED = "kun stopped while this turn was running; it was settled when kun started again"


def orphan_events(state: ThreadState, running: set[str]) -> list[ev.Event]:
    """Drafts that settle every open turn of ``state`` not in ``running``.
    A queued turn never ran, so it is no orphan: it waits to be started
    (:mod:`kun.runtime.queue`); except one that came with an import, which
    was queued on another machine and is never started here, like a turn
    that came waiting for an answer."""
    events: list[ev.Event] = []
    imported = state.imported_through
    for turn in state.turns:
        if turn.settled or turn.turn_id in running:
            continue
        if turn.status == "queued" and not (
            isinstance(imported, int) and turn.started_seq < imported
        ):
            continue
        for result in _crash_results(turn):
            events.append(draft(ev.ItemCompleted, turn.turn_id, item=result))
        error = ErrorItem(id=new_thread_local_id("err"), code="orphaned", message=ORPHANED)
        events.append(draft(ev.ItemCompleted, turn.turn_id, item=error))
        events.append(draft(ev.TurnFailed, turn.turn_id, code="orphaned", message=ORPHANED))
    return events


INTERRUPTED = (
    "The user interrupted the turn while this tool ran; it was stopped, and its "
    "effects may be partial. Check the current state before running it again."
)
NOT_RUN_INTERRUPTED = "The user interrupted the turn before this tool call started; it did not run."


def unanswered_results(
    turn: TurnState, started: tuple[str, str], not_started: tuple[str, str]
) -> Iterator[ToolResult]:
    """Results for the calls a stop left unanswered, as ``(text, code)``:
    ``started`` for those that had begun, ``not_started`` for the others of a
    step whose dispatch had begun (a call of it started, was answered or asked
    for approval). A step whose dispatch never began gets none."""
    in_flight = set(turn.tools_in_flight)
    for step in _steps(turn.items):
        dispatched = step.answered or step.asked or any(c.id in in_flight for c in step.calls)
        for call in step.calls:
            if call.id in in_flight:
                yield _result(call, *started)
            elif dispatched and call.call_id not in step.answered:
                yield _result(call, *not_started)


def _crash_results(turn: TurnState) -> Iterator[ToolResult]:
    return unanswered_results(
        turn,
        (UNKNOWN_AFTER_CRASH, "unknown_after_crash"),
        (NOT_RUN_AFTER_CRASH, "not_run_after_crash"),
    )


def interrupt_results(turn: TurnState) -> Iterator[ToolResult]:
    return unanswered_results(
        turn, (INTERRUPTED, "interrupted"), (NOT_RUN_INTERRUPTED, "not_run_interrupted")
    )


class _Step:
    """A step's tool calls, and the call ids answered or asked for approval
    after it (before the next step)."""

    def __init__(self) -> None:
        self.calls: list[ToolCall] = []
        self.answered: set[str] = set()
        self.asked: set[str] = set()
        self.closed = False


def _steps(items: Sequence[Item]) -> Iterator[_Step]:
    """A step is a run of the model's output items (text, reasoning, calls);
    what follows it up to the next output item is its window."""
    step = _Step()
    for item in items:
        if isinstance(item, AssistantText | AssistantReasoning | ToolCall):
            if step.closed:
                yield step
                step = _Step()
            if isinstance(item, ToolCall):
                step.calls.append(item)
            continue
        step.closed = True
        if isinstance(item, ToolResult):
            step.answered.add(item.call_id)
        elif isinstance(item, Approval) and item.call_id:
            step.asked.add(item.call_id)
    yield step


def _result(call: ToolCall, output: str, code: str) -> ToolResult:
    return ToolResult(
        id=new_thread_local_id("res"),
        call_id=call.call_id,
        name=call.name,
        output=output,
        is_error=True,
        code=code,
    )
