"""Chunks as an Anthropic Messages stream or body.

Stream: ``message_start`` (id, model, the input side of the usage);
content blocks opened, streamed and stopped like the API does (``text``,
``thinking`` with its ``signature_delta``, ``tool_use`` with
``input_json_delta`` fragments; a ``tool_use`` block stays open until its
call is settled); ``message_delta`` with the stop reason in Anthropic's
spelling and the output tokens; ``message_stop``. Every event has an
``event:`` line naming its type.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from kun.contracts.model import (
    ErrorChunk,
    ModelStreamChunk,
    ReasoningDeltaChunk,
    ToolCallCompleteChunk,
    ToolCallDeltaChunk,
)
from kun.testing.wire.base import Renderer, anthropic_usage, encode, summarize

__all__ = ["MessagesRenderer", "messages_body"]

_STOP = {"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens"}


class MessagesRenderer(Renderer):
    default_id = "msg_fake"

    def __init__(self, chunks: Sequence[ModelStreamChunk], finish_reason: bool, done: bool) -> None:
        super().__init__(chunks, finish_reason, done)
        self.blocks = 0
        self.open: tuple[str, int] | None = None
        self.tools: dict[int, int] = {}
        message: dict[str, Any] = {"type": "message", "role": "assistant", **self.head}
        message.update(content=[], stop_reason=None, stop_sequence=None)
        if self.usage is not None:
            usage = anthropic_usage(self.usage)
            usage.pop("cost", None)
            message["usage"] = {**usage, "output_tokens": 0}
        self.event("message_start", message=message)

    def event(self, kind: str, **body: Any) -> None:
        self.emit(kind, {"type": kind, **body})

    def block(self, kind: str) -> int:
        """The open text or thinking block, opening one of ``kind``."""
        if self.open is not None and self.open[0] == kind:
            return self.open[1]
        self.close_block()
        index = self.blocks
        self.blocks += 1
        start: dict[str, Any] = {"type": "text", "text": ""}
        if kind == "thinking":
            start = {"type": "thinking", "thinking": "", "signature": ""}
        self.event("content_block_start", index=index, content_block=start)
        self.open = (kind, index)
        return index

    def close_block(self) -> None:
        if self.open is not None:
            self.event("content_block_stop", index=self.open[1])
            self.open = None

    def text(self, text: str) -> None:
        delta = {"type": "text_delta", "text": text}
        self.event("content_block_delta", index=self.block("text"), delta=delta)

    def reasoning(self, chunk: ReasoningDeltaChunk) -> None:
        index = self.block("thinking")
        if chunk.text:
            delta = {"type": "thinking_delta", "thinking": chunk.text}
            self.event("content_block_delta", index=index, delta=delta)
        if chunk.signature is not None:
            delta = {"type": "signature_delta", "signature": chunk.signature}
            self.event("content_block_delta", index=index, delta=delta)

    def call_delta(self, chunk: ToolCallDeltaChunk) -> None:
        index = self.tools.get(chunk.index)
        if index is None:
            self.close_block()
            index = self.tools[chunk.index] = self.blocks
            self.blocks += 1
            start = {"type": "tool_use", "id": chunk.call_id, "name": chunk.name, "input": {}}
            self.event("content_block_start", index=index, content_block=start)
        elif chunk.name:
            raise ValueError("messages cannot stream a tool name in pieces")
        if chunk.arguments:
            delta = {"type": "input_json_delta", "partial_json": chunk.arguments}
            self.event("content_block_delta", index=index, delta=delta)

    def call_complete(self, chunk: ToolCallCompleteChunk) -> None:
        if chunk.index not in self.tools:
            self.whole_call(chunk)
        self.event("content_block_stop", index=self.tools[chunk.index])

    def complete(self, stop_reason: str) -> None:
        self.close_block()
        stop = _STOP.get(stop_reason, stop_reason) if self.finish_reason else None
        body: dict[str, Any] = {"delta": {"stop_reason": stop, "stop_sequence": None}}
        if self.usage is not None:
            usage = anthropic_usage(self.usage)
            body["usage"] = {k: usage[k] for k in ("output_tokens", "cost") if k in usage}
        self.event("message_delta", **body)
        if self.done:
            self.event("message_stop")

    def error(self, chunk: ErrorChunk) -> None:
        self.event("error", error={"type": chunk.code, "message": chunk.message})


def messages_body(chunks: Sequence[ModelStreamChunk]) -> bytes:
    """A non-streaming ``message``: a thinking block, a text block and one
    ``tool_use`` block per call, in that order."""
    s = summarize(chunks)
    if s.error is not None:
        error = {"type": s.error.code, "message": s.error.message}
        return encode({"type": "error", "error": error})
    content: list[dict[str, Any]] = []
    if s.reasoning or s.signature:
        thinking = {"type": "thinking", "thinking": s.reasoning, "signature": s.signature or ""}
        content.append(thinking)
    if s.text:
        content.append({"type": "text", "text": s.text})
    for cid, name, args in s.calls:
        try:
            arguments = msgspec.json.decode(args) if args.strip() else {}
        except msgspec.DecodeError:
            arguments = {"__raw": args}
        content.append({"type": "tool_use", "id": cid, "name": name, "input": arguments})
    body: dict[str, Any] = {
        "id": s.usage.request_id if s.usage is not None else "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": s.usage.model if s.usage is not None else "fake-model",
        "content": content,
        "stop_reason": _STOP.get(s.stop_reason, s.stop_reason),
        "stop_sequence": None,
    }
    if s.usage is not None:
        body["usage"] = anthropic_usage(s.usage.usage)
    return encode(body)
