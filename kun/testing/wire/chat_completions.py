"""Chunks as an OpenAI Chat Completions stream or body.

Stream: a first chunk with ``role: assistant``; one ``chat.completion.chunk``
per delta, id and model on each; a call's first delta carries its id and
``type: function``, later ones only ``index`` and argument fragments (a
late real id is sent when it changes); then the finish-reason chunk, the
usage in an empty-choices chunk, and ``data: [DONE]``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kun.contracts.model import (
    ErrorChunk,
    ModelStreamChunk,
    ReasoningDeltaChunk,
    ToolCallCompleteChunk,
    ToolCallDeltaChunk,
)
from kun.model.toolcalls import SYNTHETIC_ID_PREFIX
from kun.testing.wire.base import Renderer, encode, openai_usage, summarize

__all__ = ["ChatCompletionsRenderer", "chat_completions_body"]


class ChatCompletionsRenderer(Renderer):
    default_id = "chatcmpl-fake"

    def __init__(self, chunks: Sequence[ModelStreamChunk], finish_reason: bool, done: bool) -> None:
        super().__init__(chunks, finish_reason, done)
        self.head = {**self.head, "object": "chat.completion.chunk", "created": 0}
        self.sent_ids: dict[int, str | None] = {}
        self.chunk({"role": "assistant", "content": ""})

    def chunk(self, delta: dict[str, Any], finish: str | None = None) -> None:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        self.emit(None, {**self.head, "choices": [choice]})

    def text(self, text: str) -> None:
        self.chunk({"content": text})

    def reasoning(self, chunk: ReasoningDeltaChunk) -> None:
        if chunk.signature is not None:
            raise ValueError("chat_completions cannot carry a reasoning signature")
        self.chunk({"reasoning_content": chunk.text})

    def call_delta(self, chunk: ToolCallDeltaChunk) -> None:
        call: dict[str, Any] = {"index": chunk.index}
        first = chunk.index not in self.sent_ids
        real = None if chunk.call_id.startswith(SYNTHETIC_ID_PREFIX) else chunk.call_id
        if real is not None and self.sent_ids.get(chunk.index) != real:
            call["id"] = real
        if first or real is not None:
            self.sent_ids[chunk.index] = real or self.sent_ids.get(chunk.index)
        if first:
            call["type"] = "function"
        function: dict[str, Any] = {"name": chunk.name} if chunk.name else {}
        function["arguments"] = chunk.arguments
        call["function"] = function
        self.chunk({"tool_calls": [call]})

    def call_complete(self, chunk: ToolCallCompleteChunk) -> None:
        if chunk.index not in self.sent_ids:
            self.whole_call(chunk)

    def complete(self, stop_reason: str) -> None:
        if self.finish_reason:
            self.chunk({}, stop_reason)
        self.send_usage()
        if self.done:
            self.frames.append((None, b"[DONE]"))

    def error(self, chunk: ErrorChunk) -> None:
        self.send_usage()
        error = {"message": chunk.message, "type": chunk.code, "code": chunk.code}
        self.emit(None, {"error": error})

    def send_usage(self) -> None:
        if self.usage is not None:
            self.emit(None, {**self.head, "choices": [], "usage": openai_usage(self.usage)})


def chat_completions_body(chunks: Sequence[ModelStreamChunk]) -> bytes:
    """A non-streaming ``chat.completion`` with the whole message."""
    s = summarize(chunks)
    if s.error is not None:
        return encode({"error": {"message": s.error.message, "type": s.error.code}})
    message: dict[str, Any] = {"role": "assistant", "content": s.text or None}
    if s.reasoning:
        message["reasoning_content"] = s.reasoning
    if s.calls:
        message["tool_calls"] = [
            {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}
            for cid, name, args in s.calls
        ]
    body: dict[str, Any] = {
        "id": s.usage.request_id if s.usage is not None else "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": s.usage.model if s.usage is not None else "fake-model",
        "choices": [{"index": 0, "message": message, "finish_reason": s.stop_reason}],
    }
    if s.usage is not None:
        body["usage"] = openai_usage(s.usage.usage)
    return encode(body)
