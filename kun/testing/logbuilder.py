"""Build valid, realistic event logs without running the loop.

Used by property tests, golden logs and benchmarks. Each method appends the
events the runtime writes for one step, numbered and timestamped in order;
the clock is a counter, so the same calls build the same log.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import msgspec

from kun.contracts import events as ev
from kun.contracts.items import (
    AssistantReasoning,
    AssistantText,
    Item,
    ToolCall,
    ToolResult,
    UserMessage,
)
from kun.contracts.threads import ThreadSettings
from kun.contracts.usage import UsageSnapshot

_encode = msgspec.json.Encoder(order="sorted").encode


class LogBuilder:
    def __init__(
        self, thread_id: str = "t_demo", *, start_at: int = 1_767_225_600_000, tick_ms: int = 7
    ) -> None:
        self.thread_id = thread_id
        self.events: list[ev.Event] = []
        self.seq = 0
        self.at = start_at
        self.tick_ms = tick_ms
        self.turn_id: str | None = None
        self._ids: Iterator[int] = itertools.count(1)

    def next_id(self, prefix: str) -> str:
        return f"{prefix}_{next(self._ids):04d}"

    def emit(self, cls: type[ev.EventBase], *, turn_id: str | None = None, **fields: Any) -> Any:
        self.seq += 1
        self.at += self.tick_ms
        event = cls(seq=self.seq, at=self.at, thread_id=self.thread_id, turn_id=turn_id, **fields)
        self.events.append(event)  # type: ignore[arg-type]
        return event

    def wait(self, ms: int) -> None:
        self.at += ms

    def _turn(self, turn_id: str | None) -> str:
        chosen = turn_id or self.turn_id
        assert chosen is not None, "no turn is open"
        return chosen

    # -- thread ----------------------------------------------------------------

    def create(self, **settings: Any) -> None:
        self.emit(ev.ThreadCreated, settings=ThreadSettings(**settings))

    def update(self, **fields: Any) -> None:
        self.emit(ev.ThreadUpdated, **fields)

    def rewind(self, before_turn_id: str) -> int:
        event: ev.ThreadRewound = self.emit(ev.ThreadRewound, before_turn_id=before_turn_id)
        return event.seq

    def undo_rewind(self, rewind_seq: int) -> None:
        self.emit(ev.ThreadRewindUndone, rewind_seq=rewind_seq)

    # -- turn ------------------------------------------------------------------

    def start_turn(self, text: str | None = None, **fields: Any) -> str:
        turn_id = self.next_id("turn")
        self.turn_id = turn_id
        self.emit(ev.TurnStarted, turn_id=turn_id, **fields)
        if text is not None:
            self.user_message(text)
        return turn_id

    def user_message(self, text: str, *, steered: bool = False) -> str:
        item = UserMessage(id=self.next_id("msg"), text=text, steered=steered)
        self.emit(ev.ItemCompleted, turn_id=self._turn(None), item=item)
        return item.id

    def steer(self, text: str) -> None:
        self.emit(ev.TurnSteered, turn_id=self._turn(None), text=text)

    def stage(self, stage: str, step: int = 0) -> None:
        self.emit(ev.PipelineStage, turn_id=self._turn(None), stage=stage, step=step)

    def complete(self, stop_reason: str | None = "stop") -> None:
        self.emit(ev.TurnCompleted, turn_id=self._turn(None), stop_reason=stop_reason)
        self.turn_id = None

    def fail(self, code: str, message: str) -> None:
        self.emit(ev.TurnFailed, turn_id=self._turn(None), code=code, message=message)
        self.turn_id = None

    def abort(self, reason: str = "interrupted", *, discard: bool = False) -> None:
        self.emit(ev.TurnAborted, turn_id=self._turn(None), reason=reason, discard=discard)
        self.turn_id = None

    # -- model output ----------------------------------------------------------

    def text_deltas(self, pieces: list[str], item_id: str | None = None) -> str:
        item_id = item_id or self.next_id("txt")
        for piece in pieces:
            self.emit(ev.AssistantTextDelta, turn_id=self._turn(None), item_id=item_id, text=piece)
        return item_id

    def assistant_text(self, pieces: list[str], *, complete: bool = True) -> str:
        item_id = self.text_deltas(pieces)
        if complete:
            item = AssistantText(id=item_id, text="".join(pieces))
            self.emit(ev.ItemCompleted, turn_id=self._turn(None), item=item)
        return item_id

    def reasoning(self, pieces: list[str], *, complete: bool = True) -> str:
        item_id = self.next_id("rsn")
        turn_id = self._turn(None)
        for piece in pieces:
            self.emit(ev.AssistantReasoningDelta, turn_id=turn_id, item_id=item_id, text=piece)
        if complete:
            item = AssistantReasoning(id=item_id, text="".join(pieces))
            self.emit(ev.ItemCompleted, turn_id=turn_id, item=item)
        return item_id

    def tool_call(
        self, name: str, arguments: dict[str, Any], *, fragments: int = 1, call_id: str = ""
    ) -> ToolCall:
        """A streamed call: deltas, then the whole call (still to run)."""
        turn_id = self._turn(None)
        item_id = self.next_id("call")
        call_id = call_id or f"call_{item_id}"
        raw = _encode(arguments).decode()
        size = max(1, -(-len(raw) // max(1, fragments)))
        for i in range(0, len(raw), size):
            self.emit(
                ev.ToolCallDelta,
                turn_id=turn_id,
                item_id=item_id,
                call_id=call_id,
                name=name if i == 0 else "",
                arguments=raw[i : i + size],
            )
        call = ToolCall(
            id=item_id,
            status="in_progress",
            call_id=call_id,
            name=name,
            arguments=msgspec.Raw(raw.encode()),
        )
        self.emit(ev.ItemCreated, turn_id=turn_id, item=call)
        return call

    def start_tool(self, call: ToolCall) -> None:
        self.emit(
            ev.ToolCallStarted,
            turn_id=self._turn(None),
            item_id=call.id,
            call_id=call.call_id,
            name=call.name,
        )

    def finish_tool(
        self, call: ToolCall, output: str, *, is_error: bool = False, duration_ms: int = 3
    ) -> ToolResult:
        """The call's end and its result, as the runtime appends them: together."""
        turn_id = self._turn(None)
        self.emit(
            ev.ToolCallFinished,
            turn_id=turn_id,
            item_id=call.id,
            call_id=call.call_id,
            status="failed" if is_error else "completed",
            duration_ms=duration_ms,
        )
        result = ToolResult(
            id=self.next_id("res"),
            call_id=call.call_id,
            name=call.name,
            output=output,
            is_error=is_error,
            code="tool_execution_failed" if is_error else None,
        )
        self.emit(ev.ItemCompleted, turn_id=turn_id, item=result)
        return result

    def run_tool(self, name: str, arguments: dict[str, Any], output: str) -> ToolResult:
        call = self.tool_call(name, arguments)
        self.start_tool(call)
        return self.finish_tool(call, output)

    def item(self, item: Item) -> None:
        self.emit(ev.ItemCompleted, turn_id=self._turn(None), item=item)

    # -- gates and accounting --------------------------------------------------

    def request_approval(self, call: ToolCall, summary: str) -> str:
        approval_id = self.next_id("apr")
        self.emit(
            ev.ApprovalRequested,
            turn_id=self._turn(None),
            approval_id=approval_id,
            call_id=call.call_id,
            tool_name=call.name,
            summary=summary,
        )
        return approval_id

    def resolve_approval(self, approval_id: str, decision: str, turn_id: str | None = None) -> None:
        self.emit(
            ev.ApprovalResolved,
            turn_id=turn_id or self.turn_id,
            approval_id=approval_id,
            decision=decision,
        )

    def ask_user(self, question: str, options: tuple[str, ...] = ()) -> str:
        request_id = self.next_id("ask")
        self.emit(
            ev.UserInputRequested,
            turn_id=self._turn(None),
            request_id=request_id,
            question=question,
            options=options,
        )
        return request_id

    def answer_user(self, request_id: str, answer: str | None) -> None:
        self.emit(
            ev.UserInputResolved,
            turn_id=self.turn_id,
            request_id=request_id,
            status="answered" if answer is not None else "cancelled",
            answer=answer,
        )

    def usage(self, *, in_turn: bool = True, step: int = 0, **tokens: Any) -> None:
        self.emit(
            ev.Usage,
            turn_id=self.turn_id if in_turn else None,
            usage=UsageSnapshot(**tokens),
            provider="loopback",
            model="scripted-1",
            request_id=self.next_id("req"),
            price_source="models-dev" if tokens.get("cost_usd") is not None else None,
            step=step,
        )

    def warning(self, code: str, message: str, *, in_turn: bool = True) -> None:
        self.emit(
            ev.WarningEvent,
            turn_id=self.turn_id if in_turn else None,
            code=code,
            message=message,
        )
