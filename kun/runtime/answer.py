"""One model call's answer, gathered while its stream is recorded.

Each delta is written as it arrives and each item is built once at the end
(:meth:`Answer.items`), so the log keeps the stream's order: an item takes
its place in the turn when its first chunk arrives. A reasoning chunk with
no text (a Claude thinking block whose text is omitted: only its signature
comes) creates its item at once, or it would land after the calls it came
before. A call the provider gave no id (the decoder names it
``__kun_stream_tool_call_index_<n>``, the same on every response) takes its
item's id as call id, which is unique in the thread.

Gemini's ``thought_signature`` rides on the chunk of the part it came with
and lands on that part's item: the reasoning, the text (the last signature
of the step's text wins: kun keeps one text item per step) or the call.

A stream that broke (an ``error`` chunk) keeps what arrived, but its items
are ``failed``: the user sees the partial answer in the log, and the model
is not shown it again as if it had said it in full
(:mod:`kun.domain.history` drops failed output).
"""

from __future__ import annotations

from kun.contracts import events as ev
from kun.contracts.items import AssistantReasoning, AssistantText, Item, ItemStatus, ToolCall
from kun.contracts.model import (
    CompletedChunk,
    ErrorChunk,
    ReasoningDeltaChunk,
    TextDeltaChunk,
    ToolCallCompleteChunk,
    ToolCallDeltaChunk,
    UsageChunk,
)
from kun.ids import new_thread_local_id
from kun.model.toolcalls import SYNTHETIC_ID_PREFIX
from kun.runtime.context import TurnRun, draft

__all__ = ["Answer", "on_chunk", "thread_call_id"]


class Answer:
    """What one model call said, gathered while its deltas are recorded."""

    def __init__(self) -> None:
        self.text_id: str | None = None
        self.text: list[str] = []
        self.reasoning_id: str | None = None
        self.reasoning: list[str] = []
        self.signature: str | None = None
        self.reasoning_thought_signature: str | None = None
        self.text_thought_signature: str | None = None
        self.call_ids: dict[int, str] = {}
        self.calls: dict[int, ToolCallCompleteChunk] = {}
        self.usage: list[UsageChunk] = []
        self.stop_reason: str | None = None
        self.error: ErrorChunk | None = None

    @property
    def streamed(self) -> bool:
        """Whether any of this answer was recorded (a delta or an item)."""
        return bool(self.text_id or self.reasoning_id or self.call_ids)

    def items(self) -> list[Item]:
        """The answer's text and reasoning, ``failed`` if the stream broke."""
        status: ItemStatus = "completed" if self.error is None else "failed"
        items: list[Item] = []
        if self.reasoning_id is not None:
            items.append(
                AssistantReasoning(
                    id=self.reasoning_id,
                    status=status,
                    text="".join(self.reasoning),
                    signature=self.signature,
                    thought_signature=self.reasoning_thought_signature,
                )
            )
        if self.text_id is not None:
            items.append(
                AssistantText(
                    id=self.text_id,
                    status=status,
                    text="".join(self.text),
                    thought_signature=self.text_thought_signature,
                )
            )
        return items

    def tool_calls(self) -> list[ToolCall]:
        calls = []
        for index, chunk in sorted(self.calls.items()):
            item_id = self.call_ids.get(index) or new_thread_local_id("call")
            calls.append(
                ToolCall(
                    id=item_id,
                    status="in_progress",
                    call_id=thread_call_id(chunk.call_id, item_id),
                    name=chunk.name,
                    arguments=chunk.arguments,
                    thought_signature=chunk.thought_signature,
                )
            )
        return calls


def thread_call_id(call_id: str, item_id: str) -> str:
    """The call id to record: the provider's, or for a call it gave none the
    item's id (see the module docstring)."""
    return item_id if call_id.startswith(SYNTHETIC_ID_PREFIX) else call_id


async def on_chunk(run: TurnRun, answer: Answer, chunk: object) -> None:
    if isinstance(chunk, TextDeltaChunk):
        await _text(run, answer, chunk)
    elif isinstance(chunk, ReasoningDeltaChunk):
        await _reasoning(run, answer, chunk)
    elif isinstance(chunk, ToolCallDeltaChunk):
        item_id = answer.call_ids.get(chunk.index)
        if item_id is None:
            item_id = answer.call_ids[chunk.index] = new_thread_local_id("call")
        await run.write(
            draft(
                ev.ToolCallDelta,
                run.turn_id,
                item_id=item_id,
                call_id=thread_call_id(chunk.call_id, item_id),
                name=chunk.name,
                arguments=chunk.arguments,
            )
        )
    elif isinstance(chunk, ToolCallCompleteChunk):
        answer.calls[chunk.index] = chunk
    elif isinstance(chunk, UsageChunk):
        answer.usage.append(chunk)
    elif isinstance(chunk, CompletedChunk):
        answer.stop_reason = chunk.stop_reason
    elif isinstance(chunk, ErrorChunk):
        answer.error = chunk


async def _text(run: TurnRun, answer: Answer, chunk: TextDeltaChunk) -> None:
    if chunk.thought_signature:
        answer.text_thought_signature = chunk.thought_signature
    if chunk.text:
        if answer.text_id is None:
            answer.text_id = new_thread_local_id("txt")
        answer.text.append(chunk.text)
        await run.write(
            draft(ev.AssistantTextDelta, run.turn_id, item_id=answer.text_id, text=chunk.text)
        )


async def _reasoning(run: TurnRun, answer: Answer, chunk: ReasoningDeltaChunk) -> None:
    if answer.reasoning_id is None:
        answer.reasoning_id = new_thread_local_id("rsn")
        if not chunk.text:
            opened = AssistantReasoning(id=answer.reasoning_id, status="in_progress")
            await run.write(draft(ev.ItemCreated, run.turn_id, item=opened))
    if chunk.signature:
        answer.signature = chunk.signature
    if chunk.thought_signature:
        answer.reasoning_thought_signature = chunk.thought_signature
    if chunk.text:
        answer.reasoning.append(chunk.text)
        await run.write(
            draft(
                ev.AssistantReasoningDelta,
                run.turn_id,
                item_id=answer.reasoning_id,
                text=chunk.text,
            )
        )
