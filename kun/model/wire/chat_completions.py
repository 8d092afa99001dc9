"""OpenAI Chat Completions streams (and every OpenAI-compatible relay).

Each event's ``data`` is a ``chat.completion.chunk``; the stream ends with
``data: [DONE]``. Only the first choice is read (kun never asks for more).

* ``delta.content`` -> text; ``delta.reasoning_content`` (DeepSeek, Qwen,
  vLLM) or ``delta.reasoning`` (OpenRouter, Ollama, newer vLLM) -> reasoning.
  ``content`` given as a list of parts (Mistral) is read part by part.
* ``delta.tool_calls`` -> the shared tool-call table (see
  :mod:`kun.model.toolcalls` for every broken shape it survives); calls are
  settled when the stream ends, as the wire has no per-call end.
* ``finish_reason`` is remembered, not acted on: usage usually follows it,
  and ``[DONE]`` (or, failing that, the connection closing after it) ends
  the response.
* ``usage``: the last non-null report wins, whether it comes top-level (in an
  empty-choices chunk, or in every chunk as zeros until the last) or inside
  ``choices[0]``; a later ``usage: null`` does not erase it.
* ``{"error": {...}}`` in the stream -> an ``error`` chunk.

Frames are decoded straight into small Structs holding only the fields
read here; unknown fields are skipped by msgspec without being built.
"""

from __future__ import annotations

from typing import Any

import msgspec

from kun.contracts.model import (
    ModelStreamChunk,
    ReasoningDeltaChunk,
    TextDeltaChunk,
)
from kun.model.sse import DONE, SSEEvent
from kun.model.wire.base import StreamDecoder, describe_error

__all__ = ["ChatCompletionsDecoder"]


class _Function(msgspec.Struct, gc=False):
    name: Any = None
    arguments: Any = None


class _ToolCall(msgspec.Struct, gc=False):
    index: Any = None
    id: Any = None
    function: _Function | None = None


class _Delta(msgspec.Struct, gc=False):
    content: Any = None
    reasoning_content: Any = None
    reasoning: Any = None
    tool_calls: list[_ToolCall] | None = None


class _Choice(msgspec.Struct, gc=False):
    delta: _Delta | None = None
    message: _Delta | None = None
    finish_reason: Any = None
    usage: Any = None


class _Chunk(msgspec.Struct, gc=False):
    id: Any = None
    model: Any = None
    choices: list[_Choice] | None = None
    usage: Any = None
    error: Any = None


_decode = msgspec.json.Decoder(_Chunk).decode
_DONE = DONE.encode()


class ChatCompletionsDecoder(StreamDecoder):
    """Decodes one chat completions stream (see the module docstring)."""

    format = "chat_completions"

    def feed(self, event: SSEEvent) -> list[ModelStreamChunk]:
        if self.ended:
            return []
        raw = event.raw
        if raw == _DONE:
            return self._end()
        try:
            chunk = _decode(raw)
        except msgspec.DecodeError:
            retried = self._retry(_decode, event)
            if retried is None:
                return []
            chunk = retried
        return self._apply(chunk)

    def materialize(self, body: bytes) -> list[ModelStreamChunk]:
        """``choices[0].message`` is read as one delta, then the stream ends."""
        try:
            chunk = _decode(body)
        except msgspec.DecodeError as exc:
            return self._invalid_body(exc)
        out = self._apply(chunk)
        return out if self.ended else out + self._end()

    def _apply(self, chunk: _Chunk) -> list[ModelStreamChunk]:
        if chunk.error is not None:
            return self._fail(*describe_error(chunk.error))
        if self._request_id is None:
            self._remember(chunk.id, chunk.model)
        if isinstance(chunk.usage, dict):
            self._usage = chunk.usage
        choices = chunk.choices
        if not choices:
            return []
        choice = choices[0]
        if isinstance(choice.usage, dict):
            self._usage = choice.usage
        if isinstance(choice.finish_reason, str) and choice.finish_reason:
            self._stop_reason = choice.finish_reason
        delta = choice.delta or choice.message
        if delta is None:
            return []
        out: list[ModelStreamChunk] = []
        reasoning = delta.reasoning_content or delta.reasoning
        if reasoning and isinstance(reasoning, str):
            out.append(ReasoningDeltaChunk(text=reasoning))
        content = delta.content
        if content:
            if isinstance(content, str):
                out.append(TextDeltaChunk(text=content))
            elif isinstance(content, list):
                out.extend(_content_parts(content))
        if delta.tool_calls:
            table = self.table
            for call in delta.tool_calls:
                function = call.function
                part = table.delta(
                    call_id=call.id,
                    index=call.index,
                    name=function.name if function is not None else None,
                    arguments=function.arguments if function is not None else None,
                )
                if part is not None:
                    out.append(part)
        return out


def _content_parts(parts: list[Any]) -> list[ModelStreamChunk]:
    """Content as a list of typed parts: ``text`` parts are text, ``thinking``
    parts (their text, or their own list of text parts) are reasoning."""
    out: list[ModelStreamChunk] = []
    for part in parts:
        if isinstance(part, str):
            out.append(TextDeltaChunk(text=part))
            continue
        if not isinstance(part, dict):
            continue
        if part.get("type") == "thinking":
            thinking = part.get("thinking")
            pieces = thinking if isinstance(thinking, list) else [{"text": thinking}]
            for piece in pieces:
                text = piece.get("text") if isinstance(piece, dict) else None
                if isinstance(text, str) and text:
                    out.append(ReasoningDeltaChunk(text=text))
        else:
            text = part.get("text")
            if isinstance(text, str) and text:
                out.append(TextDeltaChunk(text=text))
    return out
