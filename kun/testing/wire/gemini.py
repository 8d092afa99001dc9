"""Chunks as a Gemini ``streamGenerateContent?alt=sse`` stream or a
``generateContent`` body.

Stream: one ``GenerateContentResponse`` per text or reasoning delta (a
``text`` part, ``thought: true`` for reasoning, with the chunk's
``thoughtSignature``); a call as one ``functionCall`` part when it is
settled (Gemini sends calls whole: the deltas before it are folded into
it; a synthesized call id is left out, as Gemini gives none, a real one
is sent as ``id``); then a last response with the ``finishReason`` in
Gemini's spelling (``STOP`` for ``stop`` and ``tool_calls``,
``MAX_TOKENS`` for ``length``, ``SAFETY`` for ``content_filter``) and the
``usageMetadata``. Gemini has no end marker (``done`` changes nothing);
``finish_reason=False`` leaves the reason out, as a cut stream would. An
``error`` chunk whose code is a broken-answer reason
(``malformed_function_call``...) is that finish reason; any other is an
``{"error": {code, message, status}}`` event.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from kun.contracts.model import (
    CompletedChunk,
    ErrorChunk,
    ModelStreamChunk,
    ReasoningDeltaChunk,
    TextDeltaChunk,
    ToolCallCompleteChunk,
    ToolCallDeltaChunk,
)
from kun.contracts.usage import UsageSnapshot
from kun.model.toolcalls import SYNTHETIC_ID_PREFIX
from kun.model.wire.gemini import BROKEN
from kun.testing.wire.base import Frame, Renderer, arguments_text, encode, summarize

__all__ = ["GeminiRenderer", "gemini_body", "gemini_error", "gemini_usage"]

_REASONS = {
    "stop": "STOP",
    "tool_calls": "STOP",
    "length": "MAX_TOKENS",
    "content_filter": "SAFETY",
}
_STATUSES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ABORTED",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    501: "UNIMPLEMENTED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
_CODES = {status: code for code, status in _STATUSES.items()}


def gemini_usage(usage: UsageSnapshot) -> dict[str, Any]:
    """A ``usageMetadata`` that normalizes back to ``usage``: the candidates
    count excludes the thoughts. A cost has no field and is dropped."""
    out: dict[str, Any] = {
        "promptTokenCount": usage.prompt_tokens,
        "candidatesTokenCount": max(usage.completion_tokens - usage.reasoning_tokens, 0),
        "totalTokenCount": usage.prompt_tokens + usage.completion_tokens,
    }
    if usage.reasoning_tokens:
        out["thoughtsTokenCount"] = usage.reasoning_tokens
    if usage.cache_hit_tokens:
        out["cachedContentTokenCount"] = usage.cache_hit_tokens
    return out


def gemini_error(message: str, code: str, status: int | None = None) -> dict[str, Any]:
    """A Google error object; ``code`` is a status name (``UNAVAILABLE``),
    or an error type of another format, then named by ``status``."""
    name = code.upper()
    if name not in _CODES:
        name = _STATUSES.get(status or 500, "INTERNAL")
    return {"error": {"code": status or _CODES.get(name, 500), "message": message, "status": name}}


class GeminiRenderer(Renderer):
    default_id = "fake-response"

    def __init__(self, chunks: Sequence[ModelStreamChunk], finish_reason: bool, done: bool) -> None:
        super().__init__(chunks, finish_reason, done)
        self.response_head: dict[str, Any] = {}
        if "model" in self.head:
            self.response_head["modelVersion"] = self.head["model"]
        if "id" in self.head:
            self.response_head["responseId"] = self.head["id"]
        self.calls: dict[int, list[str]] = {}

    def respond(self, parts: list[dict[str, Any]], **candidate: Any) -> None:
        body: dict[str, Any] = {"candidates": [{"content": {"role": "model", "parts": parts}}]}
        body["candidates"][0].update(candidate, index=0)
        self.emit(None, {**body, **self.response_head})

    def run(self, chunks: Sequence[ModelStreamChunk]) -> list[Frame]:
        """As the base, with a text chunk's signature kept on its part."""
        for chunk in chunks:
            match chunk:
                case TextDeltaChunk():
                    self.respond([_signed({"text": chunk.text}, chunk.thought_signature)])
                case ReasoningDeltaChunk():
                    self.reasoning(chunk)
                case ToolCallDeltaChunk():
                    self.call_delta(chunk)
                case ToolCallCompleteChunk():
                    self.call_complete(chunk)
                case CompletedChunk():
                    self.complete(chunk.stop_reason)
                    break
                case ErrorChunk():
                    self.error(chunk)
                    break
        return self.frames

    def text(self, text: str) -> None:
        self.respond([{"text": text}])

    def reasoning(self, chunk: ReasoningDeltaChunk) -> None:
        if chunk.signature is not None:
            raise ValueError("gemini cannot carry an Anthropic reasoning signature")
        part = {"text": chunk.text, "thought": True}
        self.respond([_signed(part, chunk.thought_signature)])

    def call_delta(self, chunk: ToolCallDeltaChunk) -> None:
        call = self.calls.setdefault(chunk.index, [chunk.call_id, "", ""])
        call[0] = chunk.call_id
        call[1] += chunk.name
        call[2] += chunk.arguments

    def call_complete(self, chunk: ToolCallCompleteChunk) -> None:
        self.calls.pop(chunk.index, None)
        self.respond([_call_part(chunk.call_id, chunk.name, arguments_text(chunk), chunk)])

    def complete(self, stop_reason: str) -> None:
        candidate: dict[str, Any] = {}
        if self.finish_reason:
            candidate["finishReason"] = _REASONS.get(stop_reason, stop_reason.upper())
        body: dict[str, Any] = {
            "candidates": [{"content": {"role": "model", "parts": []}, **candidate, "index": 0}]
        }
        if self.usage is not None:
            body["usageMetadata"] = gemini_usage(self.usage)
        self.emit(None, {**body, **self.response_head})

    def error(self, chunk: ErrorChunk) -> None:
        if chunk.code.upper() in BROKEN:
            body: dict[str, Any] = {
                "candidates": [
                    {
                        "content": {"role": "model", "parts": []},
                        "finishReason": chunk.code.upper(),
                        "finishMessage": chunk.message,
                        "index": 0,
                    }
                ]
            }
            if self.usage is not None:
                body["usageMetadata"] = gemini_usage(self.usage)
            self.emit(None, {**body, **self.response_head})
            return
        self.emit(None, gemini_error(chunk.message, chunk.code))


def gemini_body(chunks: Sequence[ModelStreamChunk]) -> bytes:
    """A non-streaming ``GenerateContentResponse``: thought part, text part
    and one ``functionCall`` part per call, in that order."""
    s = summarize(chunks)
    if s.error is not None:
        return encode(gemini_error(s.error.message, s.error.code))
    parts: list[dict[str, Any]] = []
    if s.reasoning:
        parts.append({"text": s.reasoning, "thought": True})
    if s.text:
        parts.append({"text": s.text})
    parts += (_call_part(cid, name, args, None) for cid, name, args in s.calls)
    candidate = {
        "content": {"role": "model", "parts": parts},
        "finishReason": _REASONS.get(s.stop_reason, s.stop_reason.upper()),
        "index": 0,
    }
    body: dict[str, Any] = {"candidates": [candidate]}
    if s.usage is not None:
        body["usageMetadata"] = gemini_usage(s.usage.usage)
        if s.usage.model is not None:
            body["modelVersion"] = s.usage.model
        if s.usage.request_id is not None:
            body["responseId"] = s.usage.request_id
    return encode(body)


def _call_part(
    call_id: str, name: str, args: str, chunk: ToolCallCompleteChunk | None
) -> dict[str, Any]:
    try:
        arguments = msgspec.json.decode(args) if args.strip() else {}
    except msgspec.DecodeError:
        arguments = {"__raw": args}
    if not isinstance(arguments, dict):
        arguments = {"__raw": args}
    call: dict[str, Any] = {"name": name, "args": arguments}
    if not call_id.startswith(SYNTHETIC_ID_PREFIX):
        call["id"] = call_id
    return _signed({"functionCall": call}, chunk.thought_signature if chunk else None)


def _signed(part: dict[str, Any], signature: str | None) -> dict[str, Any]:
    if signature is not None:
        part["thoughtSignature"] = signature
    return part
