"""OpenAI Responses streams.

Every event's ``data`` carries its ``type``; the ``event:`` line repeats it
and is not needed.

* ``response.output_text.delta`` (and ``response.refusal.delta``) -> text.
* ``response.reasoning_summary_text.delta`` and
  ``response.reasoning_text.delta`` (open-weight models) -> reasoning.
* Function calls: ``response.output_item.added`` opens a call (its
  ``call_id`` is the id tool results answer; the item id and
  ``output_index`` only locate it), ``response.function_call_arguments.delta``
  appends, ``response.output_item.done`` settles it with the item's full
  arguments, which are authoritative. Calls are keyed by ``output_index``.
* ``response.completed`` / ``response.incomplete`` end the response with
  usage; the stop reason is ``tool_calls`` when calls were made, ``length``
  for ``max_output_tokens``, the incomplete reason otherwise, else ``stop``.
* ``response.failed`` and ``error`` -> an ``error`` chunk.
"""

from __future__ import annotations

from typing import Any

import msgspec

from kun.contracts.model import (
    ModelStreamChunk,
    ReasoningDeltaChunk,
    TextDeltaChunk,
)
from kun.model.sse import SSEEvent
from kun.model.wire.base import StreamDecoder, describe_error

__all__ = ["ResponsesDecoder"]


class _Item(msgspec.Struct, gc=False):
    type: Any = None
    id: Any = None
    call_id: Any = None
    name: Any = None
    arguments: Any = None
    content: Any = None
    summary: Any = None


class _Response(msgspec.Struct, gc=False):
    id: Any = None
    model: Any = None
    status: Any = None
    usage: Any = None
    error: Any = None
    incomplete_details: Any = None
    output: list[_Item] | None = None


class _Event(msgspec.Struct, gc=False):
    type: Any = None
    delta: Any = None
    output_index: Any = None
    item_id: Any = None
    item: _Item | None = None
    response: _Response | None = None
    code: Any = None
    message: Any = None
    error: Any = None


_decode_event = msgspec.json.Decoder(_Event).decode
_decode_response = msgspec.json.Decoder(_Response).decode

_TEXT = frozenset({"response.output_text.delta", "response.refusal.delta"})
_REASONING = frozenset({"response.reasoning_summary_text.delta", "response.reasoning_text.delta"})
_TEXT_PARTS = frozenset({"output_text", "refusal", "text"})
_INCOMPLETE = {"max_output_tokens": "length", "content_filter": "content_filter"}


class ResponsesDecoder(StreamDecoder):
    """Decodes one Responses stream (see the module docstring)."""

    format = "responses"

    def feed(self, event: SSEEvent) -> list[ModelStreamChunk]:
        if self.ended:
            return []
        if event.is_done:
            return []
        try:
            ev = _decode_event(event.raw)
        except msgspec.DecodeError:
            retried = self._retry(_decode_event, event)
            if retried is None:
                return []
            ev = retried
        kind = ev.type
        delta = ev.delta
        if kind in _TEXT:
            return [TextDeltaChunk(text=delta)] if delta and isinstance(delta, str) else []
        if kind in _REASONING:
            return [ReasoningDeltaChunk(text=delta)] if delta and isinstance(delta, str) else []
        if kind == "response.function_call_arguments.delta":
            key = ev.output_index if ev.output_index is not None else ev.item_id
            part = self.table.delta(index=key, arguments=delta)
            return [part] if part is not None else []
        return self._lifecycle(kind, ev)

    def _lifecycle(self, kind: object, ev: _Event) -> list[ModelStreamChunk]:
        item = ev.item
        if kind == "response.output_item.added" and item is not None:
            if item.type != "function_call":
                return []
            part = self.table.delta(
                call_id=item.call_id,
                index=_key(ev, item),
                name=item.name,
                arguments=item.arguments,
            )
            return [part] if part is not None else []
        if kind == "response.output_item.done" and item is not None:
            if item.type != "function_call":
                return []
            done = self.table.complete(
                call_id=item.call_id, index=_key(ev, item), name=item.name, arguments=item.arguments
            )
            return [done] if done is not None else []
        response = ev.response
        if kind in ("response.created", "response.in_progress") and response is not None:
            self._remember(response.id, response.model)
            return []
        if kind in ("response.completed", "response.incomplete") and response is not None:
            return self._settle(response)
        if kind == "response.failed":
            error = response.error if response is not None else None
            return self._fail(*describe_error(error, "response_failed"))
        if kind == "error":
            source = ev.error if ev.error is not None else {"code": ev.code, "message": ev.message}
            return self._fail(*describe_error(source))
        return []

    def materialize(self, body: bytes) -> list[ModelStreamChunk]:
        """Output items in order (messages, reasoning summaries, function
        calls), then the end the body's status implies."""
        try:
            response = _decode_response(body)
        except msgspec.DecodeError as exc:
            return self._invalid_body(exc)
        if response.error is not None or response.status == "failed":
            return self._fail(*describe_error(response.error, "response_failed"))
        out: list[ModelStreamChunk] = []
        for position, item in enumerate(response.output or ()):
            out.extend(self._item(position, item))
        return out + self._settle(response)

    def _item(self, position: int, item: _Item) -> list[ModelStreamChunk]:
        if item.type == "function_call":
            done = self.table.complete(
                call_id=item.call_id, index=position, name=item.name, arguments=item.arguments
            )
            return [done] if done is not None else []
        parts = item.content if item.type == "message" else item.summary
        out: list[ModelStreamChunk] = []
        for part in parts if isinstance(parts, list) else ():
            if not isinstance(part, dict):
                continue
            text = part.get("text") or part.get("refusal")
            if not isinstance(text, str) or not text:
                continue
            if item.type == "reasoning":
                out.append(ReasoningDeltaChunk(text=text))
            elif item.type == "message" and part.get("type") in _TEXT_PARTS:
                out.append(TextDeltaChunk(text=text))
        return out

    def _settle(self, response: _Response) -> list[ModelStreamChunk]:
        self._remember(response.id, response.model)
        if isinstance(response.usage, dict):
            self._usage = response.usage
        reason = "stop"
        details = response.incomplete_details
        if response.status == "incomplete" and isinstance(details, dict):
            raw = details.get("reason")
            if isinstance(raw, str) and raw:
                reason = _INCOMPLETE.get(raw, raw)
        self._stop_reason = reason
        return self._end()


def _key(ev: _Event, item: _Item) -> object:
    return ev.output_index if ev.output_index is not None else item.id
