"""History repair, item level: what of a thread's items a model is shown.

A thread's items mix what the model said and was told with what only the GUI
cares about, and a provider is far stricter than the log: every assistant
tool call must be answered by exactly one result, right after it. This module
turns items into :data:`HistoryEntry` values that keep that rule by
construction (SPEC §8.3). It is pure (contracts only, no IO) and is a fold,
so a history can be extended item by item and the entries already settled
never change (:class:`HistoryRepair`); :func:`repair_history` is the one-shot
form. The message level (:mod:`kun.model.request.messages`) checks the rule
again on the wire's terms.

What is kept:

* ``user_message``: whatever its status (the user's words do not fail), when
  it has non-blank text or attachments. Steering messages are user messages.
* ``compaction`` (completed, non-empty): a user entry carrying the summary
  that stands for the items it replaced. Dropping those items is the
  window's job, before the repair (:func:`kun.domain.compaction.history_window`):
  a compaction that names its cut arrives here first, with only the items
  after that cut.
* ``assistant_text``: ``completed``, and also ``aborted`` — the text the user
  saw before stopping the reply, so a following "go on" has its context.
  ``failed`` (a broken stream) and open text are dropped, as is blank text
  (Anthropic rejects whitespace-only text blocks). A broken stream's partial
  text stays in the log for the user (:mod:`kun.runtime.answer` records it
  ``failed``, and the turn's error says why), but the model is not told it
  said it: a truncated sentence sent back as a finished assistant message
  reads as a deliberate answer, and providers give no way to mark it cut.
  The next step asks again from the user's words.
* ``assistant_reasoning``: ``completed`` only (a broken stream's is
  ``failed``: its signature may not verify), with text or a signature
  (Anthropic's or Gemini's). It is
  kept here; whether it reaches the wire is the model dialect's decision.
* ``tool_call`` / ``tool_result``: see blocks below. Open results are dropped.
* Everything else is GUI-only and dropped: ``approval``, ``user_input`` (its
  answer reaches the model as the result of the question tool), ``plan`` (the
  ``create_plan`` call and its result carry it), ``warning``, ``error``.

Steps and blocks. The model's output items between two non-output items form
one *step* (one assistant message). The step's tool calls are its block; the
results that follow are matched to them by call id, in the window between
the step and the next step. A block is sent only if every call in it is
settled, has a non-empty id unique in the block, and has exactly one result;
otherwise the whole block (calls and results) is dropped and the step keeps
its text. Results that match no call of the step before them are orphans and
are dropped; a second result for a call is dropped. A user message that
arrives while the step's results are still coming is moved after them, so it
never splits a call from its result. A step left with no text and no calls
(reasoning alone) is dropped. Call ids and tool names are passed through
untouched here: an entry pairs results with calls by position, and the
request codecs map ids and names to what each wire format accepts
(:mod:`kun.model.request.wire_ids`), so the log keeps what the model said.
A step's items keep their log order; the projection puts its reasoning
first (:mod:`kun.model.request.messages`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import msgspec

from kun.contracts.items import (
    OPEN_STATUSES,
    AssistantReasoning,
    AssistantText,
    Compaction,
    Item,
    ToolCall,
    ToolResult,
    UserMessage,
)

__all__ = ["HistoryEntry", "HistoryRepair", "ModelEntry", "Output", "UserEntry", "repair_history"]

Output = AssistantText | AssistantReasoning | ToolCall
"""An item the model produced in a step."""

_SENT_TEXT_STATUSES = frozenset({"completed", "aborted"})


class UserEntry(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """A user turn: the user's message, or a summary standing for older items."""

    item: UserMessage | Compaction


class ModelEntry(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One model step: its output in order and, when it called tools, exactly
    one result per call, in the order of the calls."""

    output: tuple[Output, ...]
    results: tuple[ToolResult, ...] = ()

    @property
    def calls(self) -> tuple[ToolCall, ...]:
        return tuple(item for item in self.output if isinstance(item, ToolCall))


HistoryEntry = UserEntry | ModelEntry


class HistoryRepair:
    """The item-level repair as a fold: :meth:`feed` items in log order.

    :attr:`settled` only grows, and its entries never change once there;
    :meth:`tail` is what the step still open would become if the history
    ended now (its results may still be coming). ``settled + tail`` of any
    prefix equals :func:`repair_history` of that prefix.
    """

    def __init__(self) -> None:
        self._settled: list[HistoryEntry] = []
        self._output: list[Output] = []
        self._call_ids: dict[str, int] = {}
        self._results: dict[str, ToolResult] = {}
        self._deferred: list[UserEntry] = []

    @property
    def settled(self) -> Sequence[HistoryEntry]:
        return self._settled

    def extend(self, items: Iterable[Item]) -> HistoryRepair:
        for item in items:
            self.feed(item)
        return self

    def feed(self, item: Item) -> None:
        if isinstance(item, AssistantText | AssistantReasoning | ToolCall):
            if _is_output(item):
                if self._results or self._deferred:
                    self._close()
                self._output.append(item)
                if isinstance(item, ToolCall):
                    self._call_ids[item.call_id] = self._call_ids.get(item.call_id, 0) + 1
        elif isinstance(item, ToolResult):
            call_id = item.call_id
            if (
                item.status not in OPEN_STATUSES
                and call_id
                and call_id in self._call_ids
                and call_id not in self._results
            ):
                self._results[call_id] = item
        elif isinstance(item, UserMessage | Compaction) and _is_user(item):
            entry = UserEntry(item=item)
            if self._waiting():
                self._deferred.append(entry)
            else:
                self._close()
                self._settled.append(entry)

    def tail(self) -> tuple[HistoryEntry, ...]:
        return (*self._step(), *self._deferred)

    def entries(self) -> tuple[HistoryEntry, ...]:
        return (*self._settled, *self.tail())

    def _waiting(self) -> bool:
        return len(self._results) < len(self._call_ids)

    def _close(self) -> None:
        self._settled += self._step()
        self._settled += self._deferred
        self._output = []
        self._call_ids = {}
        self._results = {}
        self._deferred = []

    def _step(self) -> list[HistoryEntry]:
        output = self._output
        if not output:
            return []
        calls = [item for item in output if isinstance(item, ToolCall)]
        results: tuple[ToolResult, ...] = ()
        if calls and self._answered(calls):
            results = tuple(self._results[call.call_id] for call in calls)
        elif calls:
            output = [item for item in output if not isinstance(item, ToolCall)]
        if not any(isinstance(item, AssistantText | ToolCall) for item in output):
            return []
        return [ModelEntry(output=tuple(output), results=results)]

    def _answered(self, calls: list[ToolCall]) -> bool:
        return all(
            call.call_id
            and call.status not in OPEN_STATUSES
            and self._call_ids[call.call_id] == 1
            and call.call_id in self._results
            for call in calls
        )


def repair_history(items: Iterable[Item]) -> tuple[HistoryEntry, ...]:
    """The entries a model is shown for ``items`` (see the module docstring)."""
    return HistoryRepair().extend(items).entries()


def _is_output(item: Output) -> bool:
    if isinstance(item, AssistantText):
        return item.status in _SENT_TEXT_STATUSES and bool(item.text.strip())
    if isinstance(item, AssistantReasoning):
        return item.status == "completed" and bool(
            item.text or item.signature or item.thought_signature
        )
    return True


def _is_user(item: UserMessage | Compaction) -> bool:
    if isinstance(item, UserMessage):
        return bool(item.text.strip() or item.attachments)
    return item.status == "completed" and bool(item.summary.strip())
