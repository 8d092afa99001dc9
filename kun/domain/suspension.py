"""Durable suspension: which open turns were only waiting for the user.

A turn stopped by its process while it waited at an approval or a question
is not an orphan: nothing of it was running, so nothing is in doubt. It is
*suspended*, and the next process that serves the thread re-arms it
(:mod:`kun.runtime.rearm`): the same approval or question waits again, and
the answer resumes the loop from the log.

A turn is suspended when exactly one approval or question of it is still
unanswered, and the tool calls tell the same story:

* an approval: no call is running (the call it asks about has not started,
  so running it after the answer runs it once);
* a question: the only call running is the ``request_user_input`` call that
  asked it (a question asked from inside another tool cannot be re-armed:
  that tool's own state died with the process).

Every other open turn is settled as orphaned, as before
(:mod:`kun.runtime.orphans`). So is a turn that came with an import (it
started before the thread's latest ``thread_imported``): it waited on
another machine, for a person there, in a workspace that may not exist
here, and re-arming it would ask here to run a call nobody here requested.
A side thread's turn (a sub-agent's) is never suspended either: the
parent's call that waited for its answer died with the process, and was
settled with it, so nobody would read what the re-armed turn did. Nor is a
delegated turn (``delegated_runtime``, SPEC §9): what it waited in was the
SDK's process, which is gone; the next turn rebases or resumes from the log.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from kun.contracts.items import (
    Approval,
    AssistantReasoning,
    AssistantText,
    Item,
    ToolCall,
    ToolResult,
    UserInput,
)
from kun.domain.state import ThreadState, TurnState

__all__ = ["QUESTION_TOOL", "Suspension", "find_suspension", "suspended_turns"]

QUESTION_TOOL = "request_user_input"


@dataclass(frozen=True)
class Suspension:
    """Where a suspended turn waits. ``call`` is the call the approval asks
    about, or the ``request_user_input`` call that asked the question;
    ``rest`` are the calls of the same step after it that have neither
    started nor been answered (they run once the answer is in)."""

    turn_id: str
    kind: Literal["approval", "question"]
    pending_id: str
    call: ToolCall
    rest: tuple[ToolCall, ...]


def suspended_turns(state: ThreadState) -> dict[str, Suspension]:
    """The open turns of ``state`` that are suspended, by turn id."""
    found: dict[str, Suspension] = {}
    for turn in state.turns:
        suspension = find_suspension(state, turn)
        if suspension is not None:
            found[turn.turn_id] = suspension
    return found


def find_suspension(state: ThreadState, turn: TurnState) -> Suspension | None:
    if turn.settled or state.settings.side_link is not None or turn.delegated is not None:
        return None
    imported = state.imported_through
    if isinstance(imported, int) and turn.started_seq < imported:
        return None
    ids = {item.id for item in turn.items}
    approvals = [a for a in state.pending_approvals if a in ids]
    questions = [q for q in state.pending_user_inputs if q in ids]
    if len(approvals) + len(questions) != 1:
        return None
    step = _last_step(turn.items)
    answered = {i.call_id for i in turn.items if isinstance(i, ToolResult)}
    if approvals:
        return _approval(turn, step, answered, approvals[0])
    return _question(turn, step, answered, questions[0])


def _approval(
    turn: TurnState, step: Sequence[ToolCall], answered: set[str], approval_id: str
) -> Suspension | None:
    if turn.tools_in_flight:
        return None
    approval = next(i for i in turn.items if i.id == approval_id)
    assert isinstance(approval, Approval)
    index = next((n for n, c in enumerate(step) if c.call_id == approval.call_id), None)
    if index is None or step[index].call_id in answered:
        return None
    return Suspension(
        turn.turn_id, "approval", approval_id, step[index], _rest(step, index, answered)
    )


def _question(
    turn: TurnState, step: Sequence[ToolCall], answered: set[str], request_id: str
) -> Suspension | None:
    if len(turn.tools_in_flight) != 1:
        return None
    index = next((n for n, c in enumerate(step) if c.id == turn.tools_in_flight[0]), None)
    if index is None or step[index].name != QUESTION_TOOL or step[index].call_id in answered:
        return None
    question = next(i for i in turn.items if i.id == request_id)
    assert isinstance(question, UserInput)
    return Suspension(
        turn.turn_id, "question", request_id, step[index], _rest(step, index, answered)
    )


def _rest(step: Sequence[ToolCall], index: int, answered: set[str]) -> tuple[ToolCall, ...]:
    return tuple(c for c in step[index + 1 :] if c.call_id not in answered)


def _last_step(items: Sequence[Item]) -> list[ToolCall]:
    """The tool calls of the turn's last model step: the last run of output
    items (text, reasoning, calls) and the calls in it."""
    calls: list[ToolCall] = []
    closed = False
    for item in items:
        if isinstance(item, AssistantText | AssistantReasoning | ToolCall):
            if closed:
                calls, closed = [], False
            if isinstance(item, ToolCall):
                calls.append(item)
        else:
            closed = True
    return calls
