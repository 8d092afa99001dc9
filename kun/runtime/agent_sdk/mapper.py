"""SDK messages in, kun event drafts out: the delegated turn in kun's words.

A pure translator (no IO; ids come from the ``new_id`` it is given), fed
the SDK's messages in order (:mod:`kun.runtime.agent_sdk.messages`). It
keeps the native loop's delta contract (:mod:`kun.runtime.answer`), so no
reader of the log — reducers, replay, the web view, usage — can tell who ran
the turn:

==========================================  ====================================
SDK message                                 kun events
==========================================  ====================================
``stream_event`` ``content_block_delta``    ``assistant_text_delta`` /
                                            ``assistant_reasoning_delta``: a
                                            fragment to append
``assistant``: a text or thinking block     ``item_completed`` with the whole
                                            text, under the id its deltas used
``assistant``: a ``tool_use`` block         ``item_created`` (``tool_call``,
                                            in progress) + ``tool_call_started``
``user``: a ``tool_result`` block           ``tool_call_finished`` +
                                            ``item_completed`` (``tool_result``)
``result``                                  ``usage`` (Anthropic semantics, the
                                            SDK's ``total_cost_usd`` as cost);
                                            the turn's :class:`SdkOutcome`
``system`` ``init``                         the session id (no event)
==========================================  ====================================

The SDK runs its tools itself, so the call ledger is this mapper's: a call
is started when the model's ``tool_use`` arrives and finished when its
result does. kun's own tools, bridged through MCP, are named
``mcp__kun__<tool>`` by the SDK; the log records kun's name. Messages of a
sub-agent (``parent_tool_use_id`` set) are the SDK's internals: the call
that ran it and its result are what the log shows.

Whatever is left open when the stream ends (an interrupt, a broken
process) is closed by :meth:`SdkEventMapper.close`: a streamed text
without its authoritative message keeps what arrived, ``failed`` or
``aborted``; a started call without a result is finished ``aborted`` with
an error result, so every call in the log has exactly one result.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import msgspec

from kun.contracts import events as ev
from kun.contracts.items import AssistantReasoning, AssistantText, ItemStatus, ToolCall, ToolResult
from kun.contracts.usage import UsageSnapshot
from kun.ids import new_thread_local_id
from kun.runtime.agent_sdk.messages import (
    AssistantMessage,
    ResultMessage,
    SdkMessage,
    StreamEvent,
    SystemMessage,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)

__all__ = ["BRIDGE_PREFIX", "PRICE_SOURCE", "SdkEventMapper", "SdkOutcome", "sdk_usage"]

BRIDGE_PREFIX = "mcp__kun__"
"""How the SDK names a tool of kun's in-process MCP server ``kun``."""
PRICE_SOURCE = "agent-sdk"
"""The ``usage`` event's price source: the cost is the SDK's own figure."""
ABORTED_REASONS = frozenset({"aborted_streaming", "aborted_tools"})
NO_RESULT = "agent_sdk_no_result"

Status = Literal["completed", "failed", "aborted"]


@dataclass(frozen=True)
class SdkOutcome:
    """How the SDK ended the query: ``completed`` (``stop_reason``),
    ``failed`` (``code``, ``message``) or ``aborted`` (interrupted)."""

    status: Status
    stop_reason: str | None = None
    code: str | None = None
    message: str | None = None


@dataclass
class _Streamed:
    kind: Literal["text", "thinking"]
    item_id: str
    parts: list[str] = field(default_factory=list)


@dataclass
class _Call:
    item: ToolCall
    finished: bool = False


def _draft(cls: type[Any], turn_id: str, **fields: Any) -> Any:
    return cls(seq=0, at=0, thread_id="", turn_id=turn_id, **fields)


def sdk_usage(raw: dict[str, Any] | None, cost_usd: float | None) -> UsageSnapshot:
    """The SDK's usage object (Anthropic's: ``input_tokens`` excludes cache
    reads and writes, so the prompt is input + cache read + cache creation)
    with the SDK's cost."""
    raw = raw or {}

    def count(name: str) -> int:
        value = raw.get(name)
        return value if isinstance(value, int) and value > 0 else 0

    uncached = count("input_tokens")
    read = count("cache_read_input_tokens")
    written = count("cache_creation_input_tokens")
    return UsageSnapshot(
        prompt_tokens=uncached + read + written,
        completion_tokens=count("output_tokens"),
        cache_hit_tokens=read,
        cache_miss_tokens=uncached + written,
        cache_write_tokens=written,
        cost_usd=cost_usd,
    )


def kun_tool_name(name: str) -> str:
    """The name the log records for an SDK tool: kun's own for a bridged one."""
    return name.removeprefix(BRIDGE_PREFIX)


class SdkEventMapper:
    """Maps one delegated turn's SDK messages (see the module docstring).
    ``provider`` and ``model`` label the usage events."""

    def __init__(
        self,
        turn_id: str,
        *,
        provider: str | None = None,
        model: str | None = None,
        new_id: Callable[[str], str] = new_thread_local_id,
    ) -> None:
        self.turn_id = turn_id
        self.provider = provider
        self.model = model
        self.session_id: str | None = None
        self.outcome: SdkOutcome | None = None
        self._new_id = new_id
        self._blocks: dict[int, _Streamed] = {}
        self._unclaimed: list[_Streamed] = []
        self._calls: dict[str, _Call] = {}
        self._step = 0

    def feed(self, message: SdkMessage) -> list[ev.Event]:
        """The events ``message`` adds to the turn."""
        if isinstance(message, StreamEvent):
            return [] if message.parent_tool_use_id else self._stream(message.event)
        if isinstance(message, AssistantMessage):
            return [] if message.parent_tool_use_id else self._assistant(message)
        if isinstance(message, UserMessage):
            return [] if message.parent_tool_use_id else self._user(message)
        if isinstance(message, ResultMessage):
            return self._result(message)
        if isinstance(message, SystemMessage) and message.subtype == "init":
            session = message.data.get("session_id")
            if isinstance(session, str) and session:
                self.session_id = session
        return []

    def close(self, status: Literal["failed", "aborted"]) -> list[ev.Event]:
        """Close what is still open (see the module docstring)."""
        events: list[ev.Event] = []
        for streamed in self._unclaimed:
            events.append(self._streamed_item(streamed, "".join(streamed.parts), status))
        self._unclaimed.clear()
        self._blocks.clear()
        for call in self._calls.values():
            if not call.finished:
                events.extend(self._no_result(call, status))
        return events

    @property
    def open_calls(self) -> int:
        return sum(not call.finished for call in self._calls.values())

    # -- stream events ---------------------------------------------------------

    def _stream(self, event: dict[str, Any]) -> list[ev.Event]:
        kind = event.get("type")
        index = event.get("index")
        if kind == "message_start":
            self._blocks = {}
            return []
        if not isinstance(index, int):
            return []
        if kind == "content_block_start":
            block = event.get("content_block") or {}
            if block.get("type") in ("text", "thinking"):
                self._open(index, block["type"])
            return []
        if kind != "content_block_delta":
            return []
        delta = event.get("delta") or {}
        if delta.get("type") == "text_delta" and delta.get("text"):
            streamed = self._block(index, "text")
            streamed.parts.append(delta["text"])
            return [
                _draft(
                    ev.AssistantTextDelta,
                    self.turn_id,
                    item_id=streamed.item_id,
                    text=delta["text"],
                )
            ]
        if delta.get("type") == "thinking_delta" and delta.get("thinking"):
            streamed = self._block(index, "thinking")
            streamed.parts.append(delta["thinking"])
            return [
                _draft(
                    ev.AssistantReasoningDelta,
                    self.turn_id,
                    item_id=streamed.item_id,
                    text=delta["thinking"],
                )
            ]
        return []

    def _open(self, index: int, kind: Literal["text", "thinking"]) -> _Streamed:
        streamed = _Streamed(kind, self._new_id("txt" if kind == "text" else "rsn"))
        self._blocks[index] = streamed
        self._unclaimed.append(streamed)
        return streamed

    def _block(self, index: int, kind: Literal["text", "thinking"]) -> _Streamed:
        streamed = self._blocks.get(index)
        if streamed is None or streamed.kind != kind or streamed not in self._unclaimed:
            streamed = self._open(index, kind)
        return streamed

    def _claim(self, kind: Literal["text", "thinking"]) -> _Streamed | None:
        """The oldest streamed block of ``kind`` no message has completed:
        the CLI sends a message's blocks in the order it streamed them."""
        for i, streamed in enumerate(self._unclaimed):
            if streamed.kind == kind:
                return self._unclaimed.pop(i)
        return None

    # -- whole messages --------------------------------------------------------

    def _assistant(self, message: AssistantMessage) -> list[ev.Event]:
        events: list[ev.Event] = []
        for block in message.content:
            if isinstance(block, TextBlock):
                streamed = self._claim("text") or _Streamed("text", self._new_id("txt"))
                events.append(self._streamed_item(streamed, block.text, "completed"))
            elif isinstance(block, ThinkingBlock):
                streamed = self._claim("thinking") or _Streamed("thinking", self._new_id("rsn"))
                events.append(
                    self._streamed_item(
                        streamed, block.thinking, "completed", signature=block.signature or None
                    )
                )
            elif isinstance(block, ToolUseBlock) and block.id not in self._calls:
                events.extend(self._tool_use(block))
        return events

    def _streamed_item(
        self,
        streamed: _Streamed,
        text: str,
        status: ItemStatus,
        *,
        signature: str | None = None,
    ) -> ev.Event:
        item: AssistantText | AssistantReasoning
        if streamed.kind == "text":
            item = AssistantText(id=streamed.item_id, status=status, text=text)
        else:
            item = AssistantReasoning(
                id=streamed.item_id, status=status, text=text, signature=signature
            )
        completed: ev.Event = _draft(ev.ItemCompleted, self.turn_id, item=item)
        return completed

    def _tool_use(self, block: ToolUseBlock) -> list[ev.Event]:
        name = kun_tool_name(block.name)
        call = ToolCall(
            id=self._new_id("call"),
            status="in_progress",
            call_id=block.id,
            name=name,
            arguments=msgspec.Raw(json.dumps(block.input, ensure_ascii=False).encode()),
        )
        self._calls[block.id] = _Call(call)
        return [
            _draft(ev.ItemCreated, self.turn_id, item=call),
            _draft(
                ev.ToolCallStarted,
                self.turn_id,
                item_id=call.id,
                call_id=call.call_id,
                name=name,
            ),
        ]

    def _user(self, message: UserMessage) -> list[ev.Event]:
        if isinstance(message.content, str):
            return []
        events: list[ev.Event] = []
        for block in message.content:
            if not isinstance(block, ToolResultBlock):
                continue
            call = self._calls.get(block.tool_use_id)
            if call is None or call.finished:
                continue
            events.extend(
                self._finished(
                    call,
                    result_text(block.content),
                    is_error=bool(block.is_error),
                    status="failed" if block.is_error else "completed",
                )
            )
        return events

    def _finished(
        self, call: _Call, output: str, *, is_error: bool, status: Status, code: str | None = None
    ) -> list[ev.Event]:
        call.finished = True
        item = call.item
        result = ToolResult(
            id=self._new_id("res"),
            call_id=item.call_id,
            name=item.name,
            output=output,
            is_error=is_error,
            code=code,
        )
        return [
            _draft(
                ev.ToolCallFinished,
                self.turn_id,
                item_id=item.id,
                call_id=item.call_id,
                status=status,
            ),
            _draft(ev.ItemCompleted, self.turn_id, item=result),
        ]

    def _no_result(self, call: _Call, status: Literal["failed", "aborted"]) -> list[ev.Event]:
        why = "was interrupted" if status == "aborted" else "ended"
        output = f"No result: the Claude Agent SDK run {why} before this call returned."
        return self._finished(call, output, is_error=True, status="aborted", code=NO_RESULT)

    def _result(self, message: ResultMessage) -> list[ev.Event]:
        if message.session_id:
            self.session_id = message.session_id
        self.outcome = outcome_of(message)
        usage: ev.Event = _draft(
            ev.Usage,
            self.turn_id,
            usage=sdk_usage(message.usage, message.total_cost_usd),
            provider=self.provider,
            model=self.model,
            price_source=PRICE_SOURCE,
            step=self._step,
        )
        self._step += 1
        events = [usage]
        if self.outcome.status != "completed" or self.open_calls or self._unclaimed:
            status: Literal["failed", "aborted"] = (
                "aborted" if self.outcome.status == "aborted" else "failed"
            )
            events.extend(self.close(status))
        return events


def outcome_of(message: ResultMessage) -> SdkOutcome:
    """A ``result`` message's outcome: interrupted (``terminal_reason``
    ``aborted_*``), failed with a code per error subtype, or completed."""
    if message.terminal_reason in ABORTED_REASONS:
        return SdkOutcome("aborted")
    if message.is_error or message.subtype != "success":
        if message.subtype == "success":
            code = "agent_sdk_api_error"
        else:
            code = "agent_sdk_" + message.subtype.removeprefix("error_")
        detail = "; ".join(message.errors or ()) or message.result or message.subtype
        if message.api_error_status is not None:
            detail = f"{detail} (HTTP {message.api_error_status})"
        return SdkOutcome("failed", code=code, message=f"Claude Agent SDK: {detail}")
    return SdkOutcome("completed", stop_reason=message.stop_reason or "end_turn")


def result_text(content: str | list[dict[str, Any]] | None) -> str:
    """A tool result's content as text: text blocks joined, an image named."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = []
    for block in content:
        if block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        elif block.get("type") == "image":
            parts.append("(image omitted)")
    return "\n".join(parts)
