"""Chunks as an OpenAI Responses stream or body.

Stream: ``response.created`` and ``response.in_progress``; text and
reasoning become ``message`` and ``reasoning`` output items, each added,
streamed (``output_text.delta``, ``reasoning_summary_text.delta``) and
closed with their ``done`` events like the API does; calls are
``function_call`` items (added, ``function_call_arguments.delta``,
``function_call_arguments.done``, ``output_item.done``); the end is
``response.completed`` (``response.incomplete`` for ``length`` and other
unnatural stops) with the usage. Every event carries a ``sequence_number``
and an ``event:`` line naming its type.
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
from kun.testing.wire.base import Renderer, arguments_text, encode, openai_usage, summarize

__all__ = ["ResponsesRenderer", "responses_body"]

_INCOMPLETE = {"length": "max_output_tokens"}


class ResponsesRenderer(Renderer):
    default_id = "resp_fake"

    def __init__(self, chunks: Sequence[ModelStreamChunk], finish_reason: bool, done: bool) -> None:
        super().__init__(chunks, finish_reason, done)
        self.head = {**self.head, "object": "response", "created_at": 0}
        self.output: dict[int, dict[str, Any]] = {}
        self.open: dict[str, Any] | None = None
        self.calls: dict[int, dict[str, Any]] = {}
        self.sequence = 0
        response = {**self.head, "status": "in_progress", "output": []}
        self.event("response.created", response=response)
        self.event("response.in_progress", response=response)

    def event(self, kind: str, **body: Any) -> None:
        self.emit(kind, {"type": kind, "sequence_number": self.sequence, **body})
        self.sequence += 1

    def text(self, text: str) -> None:
        item = self.item("message")
        item["text"] += text
        where = {"item_id": item["id"], "output_index": item["output_index"]}
        self.event("response.output_text.delta", **where, content_index=0, delta=text)

    def reasoning(self, chunk: ReasoningDeltaChunk) -> None:
        if chunk.signature is not None:
            raise ValueError("responses cannot carry a reasoning signature")
        item = self.item("reasoning")
        item["text"] += chunk.text
        where = {"item_id": item["id"], "output_index": item["output_index"]}
        self.event(
            "response.reasoning_summary_text.delta", **where, summary_index=0, delta=chunk.text
        )

    def item(self, kind: str) -> dict[str, Any]:
        """The open message or reasoning item, opening one of ``kind``."""
        if self.open is not None and self.open["kind"] == kind:
            return self.open
        self.close_item()
        position = len(self.output)
        item_id = f"{'msg' if kind == 'message' else 'rs'}_{position}"
        self.output[position] = {}
        self.open = {"kind": kind, "id": item_id, "output_index": position, "text": ""}
        where = {"item_id": item_id, "output_index": position}
        added: dict[str, Any]
        if kind == "message":
            added = {"id": item_id, "type": "message", "status": "in_progress"}
            added["role"] = "assistant"
            self.event("response.output_item.added", output_index=position, item=added)
            part = {"type": "output_text", "text": "", "annotations": []}
            self.event("response.content_part.added", **where, content_index=0, part=part)
        else:
            added = {"id": item_id, "type": "reasoning", "summary": []}
            self.event("response.output_item.added", output_index=position, item=added)
            part = {"type": "summary_text", "text": ""}
            self.event("response.reasoning_summary_part.added", **where, summary_index=0, part=part)
        return self.open

    def close_item(self) -> None:
        item, self.open = self.open, None
        if item is None:
            return
        text, position = item["text"], item["output_index"]
        where = {"item_id": item["id"], "output_index": position}
        done: dict[str, Any]
        if item["kind"] == "message":
            part = {"type": "output_text", "text": text, "annotations": []}
            self.event("response.output_text.done", **where, content_index=0, text=text)
            self.event("response.content_part.done", **where, content_index=0, part=part)
            done = {"id": item["id"], "type": "message", "status": "completed"}
            done.update(role="assistant", content=[part])
        else:
            part = {"type": "summary_text", "text": text}
            self.event("response.reasoning_summary_text.done", **where, summary_index=0, text=text)
            self.event("response.reasoning_summary_part.done", **where, summary_index=0, part=part)
            done = {"id": item["id"], "type": "reasoning", "summary": [part]}
        self.event("response.output_item.done", output_index=position, item=done)
        self.output[position] = done

    def call_delta(self, chunk: ToolCallDeltaChunk) -> None:
        call = self.calls.get(chunk.index)
        if call is None:
            self.close_item()
            position = len(self.output)
            call = {
                "id": f"fc_{position}",
                "type": "function_call",
                "status": "in_progress",
                "arguments": "",
                "call_id": chunk.call_id,
                "name": chunk.name,
            }
            self.event("response.output_item.added", output_index=position, item=call)
            self.output[position] = call
            self.calls[chunk.index] = call = {**call, "output_index": position}
        elif chunk.name:
            raise ValueError("responses cannot stream a tool name in pieces")
        if chunk.arguments:
            self.event(
                "response.function_call_arguments.delta",
                item_id=call["id"],
                output_index=call["output_index"],
                delta=chunk.arguments,
            )

    def call_complete(self, chunk: ToolCallCompleteChunk) -> None:
        if chunk.index not in self.calls:
            self.whole_call(chunk)
        call = self.calls[chunk.index]
        text, position = arguments_text(chunk), call.pop("output_index")
        self.event(
            "response.function_call_arguments.done",
            item_id=call["id"],
            output_index=position,
            arguments=text,
        )
        done = {**call, "status": "completed", "arguments": text}
        self.output[position] = done
        self.event("response.output_item.done", output_index=position, item=done)

    def complete(self, stop_reason: str) -> None:
        self.close_item()
        response, kind = _response(self.head, self.output, stop_reason, self.finish_reason)
        if self.usage is not None:
            response["usage"] = openai_usage(self.usage, "input", "output")
        if self.done:
            self.event(kind, response=response)

    def error(self, chunk: ErrorChunk) -> None:
        error = {"code": chunk.code, "message": chunk.message}
        self.event("response.failed", response={**self.head, "status": "failed", "error": error})


def _response(
    head: dict[str, Any], output: dict[int, dict[str, Any]], stop_reason: str, status: bool
) -> tuple[dict[str, Any], str]:
    """The final response object and the event that carries it."""
    response: dict[str, Any] = {**head, "output": [output[k] for k in sorted(output)]}
    if not status:
        return response, "response.completed"
    if stop_reason in ("stop", "tool_calls"):
        response["status"] = "completed"
        return response, "response.completed"
    response["status"] = "incomplete"
    response["incomplete_details"] = {"reason": _INCOMPLETE.get(stop_reason, stop_reason)}
    return response, "response.incomplete"


def responses_body(chunks: Sequence[ModelStreamChunk]) -> bytes:
    """A non-streaming ``response``: a reasoning item, a message item and
    one ``function_call`` item per call, in that order."""
    s = summarize(chunks)
    head: dict[str, Any] = {
        "id": s.usage.request_id if s.usage is not None else "resp_fake",
        "object": "response",
        "created_at": 0,
        "model": s.usage.model if s.usage is not None else "fake-model",
    }
    if s.error is not None:
        error = {"code": s.error.code, "message": s.error.message}
        return encode({**head, "status": "failed", "error": error, "output": []})
    output: list[dict[str, Any]] = []
    if s.reasoning:
        summary = [{"type": "summary_text", "text": s.reasoning}]
        output.append({"id": "rs_0", "type": "reasoning", "summary": summary})
    if s.text:
        part = {"type": "output_text", "text": s.text, "annotations": []}
        output.append({"id": "msg_0", "type": "message", "role": "assistant", "content": [part]})
    for n, (cid, name, args) in enumerate(s.calls):
        call = {"id": f"fc_{n}", "type": "function_call", "call_id": cid, "name": name}
        output.append({**call, "arguments": args})
    response, _ = _response(head, dict(enumerate(output)), s.stop_reason, True)
    if s.usage is not None:
        response["usage"] = openai_usage(s.usage.usage, "input", "output")
    return encode(response)
