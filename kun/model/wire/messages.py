"""Anthropic Messages streams.

Every event's ``data`` carries its ``type`` (the ``event:`` line repeats it).

* ``message_start``: the message id, model and first usage report.
* ``content_block_start`` / ``content_block_delta`` / ``content_block_stop``
  per block index: ``text_delta`` -> text; ``thinking_delta`` -> reasoning;
  ``signature_delta`` -> a reasoning chunk carrying only the signature;
  ``tool_use`` blocks open a call keyed by the block index,
  ``input_json_delta`` appends to it and the block's stop settles it (a
  block whose ``input`` arrived whole at start and got no delta uses that).
* ``message_delta``: the stop reason (``end_turn``/``stop_sequence`` ->
  ``stop``, ``tool_use`` -> ``tool_calls``, ``max_tokens`` and
  ``model_context_window_exceeded`` -> ``length``; others pass through) and
  cumulative usage, merged over ``message_start``'s.
* ``message_stop`` ends the response.
* ``ping`` is a keep-alive: counted, no chunk, not progress.
* ``error`` (e.g. ``overloaded_error`` on an HTTP 200 stream) -> an
  ``error`` chunk whose code is the error type.

Usage is Anthropic-style: ``input_tokens`` excludes cache reads and writes
(see :mod:`kun.model.usage`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgspec

from kun.contracts.model import (
    ModelStreamChunk,
    ReasoningDeltaChunk,
    TextDeltaChunk,
)
from kun.model.sse import SSEEvent
from kun.model.usage import merge_usage
from kun.model.wire.base import StreamDecoder, describe_error

__all__ = ["MessagesDecoder"]


class _Block(msgspec.Struct, gc=False):
    type: Any = None
    id: Any = None
    name: Any = None
    input: Any = None
    text: Any = None
    thinking: Any = None
    signature: Any = None


class _BlockDelta(msgspec.Struct, gc=False):
    type: Any = None
    text: Any = None
    thinking: Any = None
    signature: Any = None
    partial_json: Any = None
    stop_reason: Any = None


class _Message(msgspec.Struct, gc=False):
    id: Any = None
    model: Any = None
    usage: Any = None
    stop_reason: Any = None
    content: list[_Block] | None = None
    error: Any = None
    type: Any = None


class _Event(msgspec.Struct, gc=False):
    type: Any = None
    index: Any = None
    delta: _BlockDelta | None = None
    content_block: _Block | None = None
    message: _Message | None = None
    usage: Any = None
    error: Any = None


_decode_event = msgspec.json.Decoder(_Event).decode
_decode_message = msgspec.json.Decoder(_Message).decode

STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
}


class MessagesDecoder(StreamDecoder):
    """Decodes one Anthropic Messages stream (see the module docstring)."""

    format = "messages"

    def __init__(self) -> None:
        super().__init__()
        self._whole_input: dict[object, str] = {}
        self._streamed: set[object] = set()

    def feed(self, event: SSEEvent) -> list[ModelStreamChunk]:
        if self.ended:
            return []
        try:
            ev = _decode_event(event.raw)
        except msgspec.DecodeError:
            retried = self._retry(_decode_event, event)
            if retried is None:
                return []
            ev = retried
        return self._apply(ev)

    def feed_all(self, events: Iterable[SSEEvent]) -> list[ModelStreamChunk]:
        """As the base, with the text delta (nearly every event) inlined."""
        out: list[ModelStreamChunk] = []
        decode = _decode_event
        for event in events:
            if self.ended:
                break
            try:
                ev = decode(event.raw)
            except msgspec.DecodeError:
                retried = self._retry(decode, event)
                if retried is None:
                    continue
                ev = retried
            delta = ev.delta
            if (
                ev.type == "content_block_delta"
                and delta is not None
                and delta.type == "text_delta"
            ):
                text = delta.text
                if text and isinstance(text, str):
                    out.append(TextDeltaChunk(text=text))
            else:
                out += self._apply(ev)
        return out

    def _apply(self, ev: _Event) -> list[ModelStreamChunk]:
        kind = ev.type
        if kind == "content_block_delta":
            delta = ev.delta
            return self._delta(ev.index, delta) if delta is not None else []
        if kind == "ping":
            self.keepalives += 1
            return []
        return self._lifecycle(kind, ev)

    def _delta(self, index: object, delta: _BlockDelta) -> list[ModelStreamChunk]:
        kind = delta.type
        if kind == "text_delta":
            text = delta.text
            return [TextDeltaChunk(text=text)] if text and isinstance(text, str) else []
        if kind == "thinking_delta":
            text = delta.thinking
            return [ReasoningDeltaChunk(text=text)] if text and isinstance(text, str) else []
        if kind == "input_json_delta":
            self._streamed.add(index)
            part = self.table.delta(index=index, arguments=delta.partial_json)
            return [part] if part is not None else []
        if kind == "signature_delta":
            sig = delta.signature
            if sig and isinstance(sig, str):
                return [ReasoningDeltaChunk(text="", signature=sig)]
        return []

    def _lifecycle(self, kind: object, ev: _Event) -> list[ModelStreamChunk]:
        if kind == "content_block_start" and ev.content_block is not None:
            return self._start(ev.index, ev.content_block)
        if kind == "content_block_stop":
            whole = self._whole_input.pop(ev.index, None)
            if ev.index in self._streamed:
                whole = None
            done = self.table.complete(index=ev.index, arguments=whole)
            return [done] if done is not None else []
        if kind == "message_start" and ev.message is not None:
            self._remember(ev.message.id, ev.message.model)
            self._usage = merge_usage(self._usage, ev.message.usage)
            return []
        if kind == "message_delta":
            if ev.delta is not None and isinstance(ev.delta.stop_reason, str):
                self._stop_reason = STOP_REASONS.get(ev.delta.stop_reason, ev.delta.stop_reason)
            self._usage = merge_usage(self._usage, ev.usage)
            return []
        if kind == "message_stop":
            return self._end()
        if kind == "error":
            return self._fail(*describe_error(ev.error))
        return []

    def materialize(self, body: bytes) -> list[ModelStreamChunk]:
        """Content blocks in order (a thinking block's signature after its
        text, a tool_use settled at once), then the end ``stop_reason``
        implies."""
        try:
            message = _decode_message(body)
        except msgspec.DecodeError as exc:
            return self._invalid_body(exc)
        if message.type == "error" or message.error is not None:
            return self._fail(*describe_error(message.error))
        self._remember(message.id, message.model)
        self._usage = merge_usage(None, message.usage)
        out: list[ModelStreamChunk] = []
        for position, block in enumerate(message.content or ()):
            out.extend(self._start(position, block))
            if block.type == "thinking" and isinstance(block.signature, str) and block.signature:
                out.append(ReasoningDeltaChunk(text="", signature=block.signature))
            if block.type == "tool_use":
                whole = self._whole_input.pop(position, None)
                done = self.table.complete(index=position, arguments=whole)
                if done is not None:
                    out.append(done)
        reason = message.stop_reason
        self._stop_reason = STOP_REASONS.get(reason, reason) if isinstance(reason, str) else None
        return out + self._end()

    def _start(self, index: object, block: _Block) -> list[ModelStreamChunk]:
        kind = block.type
        if kind == "tool_use":
            if isinstance(block.input, dict) and block.input:
                self._whole_input[index] = msgspec.json.encode(block.input).decode()
            part = self.table.delta(call_id=block.id, index=index, name=block.name)
            return [part] if part is not None else []
        if kind == "text" and isinstance(block.text, str) and block.text:
            return [TextDeltaChunk(text=block.text)]
        if kind == "thinking" and isinstance(block.thinking, str) and block.thinking:
            return [ReasoningDeltaChunk(text=block.thinking)]
        return []
