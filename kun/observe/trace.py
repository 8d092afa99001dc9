"""One turn's observations: a record per model call, tool call and the turn.

A :class:`TurnTrace` lives from the moment a run is built to ``turn_ended``
(:mod:`kun.observe.observer`). Its records are plain dicts, written as JSON
lines by the sink and closing the matching spans. They carry ids, timings,
statuses, token counts and cost, never text: a provider's error message may
quote the request, so only its code is kept. With ``content`` on they add
the new history items a call sent, its reply and tool calls, and a tool's
arguments and output, every string passed through the tool host's
redaction (the secrets kun knows of, in all their encodings).

A wait for the user (an approval, a question) is a record too, with its
decision and how long it took: ``approved``, ``denied``, ``expired``,
``answered``, ``cancelled``; ``interrupted`` when the turn was interrupted
while it waited; ``suspended`` when the process stopped while it waited
(the wait goes on in the next process, which re-arms the turn: its record
there says ``resumed``), and then the turn's own status is ``suspended``
too, not ``failed``: its log has no end, and it is not over.

The turn's ``cost_usd`` sums the costs its model calls know, as ``kun
usage`` does: ``null`` when none of them had a price (an unpriced model's
turn is not free, its cost is unknown), and ``unpriced_calls`` says how many
calls are missing from a sum (a call that reported no usage at all is one
of them). A turn that made no model call cost ``0.0``.

``step`` is the loop's step, read off the ``pre_send`` stage the loop
records just before it sends (so a step sent again after an idle stream or
a compaction keeps its number); ``call`` counts the turn's model calls.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import msgspec

from kun.contracts.model import (
    CompletedChunk,
    ErrorChunk,
    ModelRequest,
    ModelStreamChunk,
    TextDeltaChunk,
    ToolCallCompleteChunk,
    UsageChunk,
)
from kun.observe.sink import Sink, now_iso
from kun.observe.spans import Spans
from kun.tools.base import ToolOutput

__all__ = ["ModelCall", "ToolCallTrace", "TurnTrace", "WaitTrace", "guarded"]

_encode = msgspec.json.Encoder().encode
_log = logging.getLogger(__name__)
T = TypeVar("T")


def guarded(fn: Callable[..., T], *args: Any) -> T | None:
    """``fn(*args)``, or ``None`` after logging what it raised: observing
    a turn must never fail it (a full disk, a broken exporter)."""
    try:
        return fn(*args)
    except Exception:
        _log.exception("observing a turn failed in %s", getattr(fn, "__name__", fn))
        return None


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


def scrub(value: Any, redact: Callable[[str], str]) -> Any:
    """``value`` (JSON-like) with every string redacted."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: scrub(v, redact) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [scrub(v, redact) for v in value]
    return value


class TurnTrace:
    def __init__(
        self,
        *,
        thread_id: str,
        turn_id: str,
        provider: str,
        model: str,
        sink: Sink | None,
        spans: Spans | None,
        redact: Callable[[str], str] | None,
        caller: Mapping[str, str] | None = None,
    ) -> None:
        """``redact`` is ``None`` unless content is logged; ``caller``: the
        trace headers of the request that started the turn
        (:mod:`kun.observe.propagation`)."""
        self.ids = {"thread_id": thread_id, "turn_id": turn_id}
        self.sink = sink
        self.spans = spans
        self.redact = redact
        self.step = 0
        self.calls = 0
        self.tools = 0
        self.sent = 0
        self.started = time.perf_counter()
        self.totals = {"input_tokens": 0, "output_tokens": 0}
        self.cost = 0.0
        self.priced = 0
        self.waits: dict[str, WaitTrace] = {}
        self.waited = {"waits": 0, "wait_ms": 0.0}
        self.suspended = False
        self.requested: dict[str, str | None] = {}
        opening = {"provider": provider, "model": model, **self.ids}
        self.span = spans.turn(opening, caller) if spans is not None else None

    def emit(self, record: dict[str, Any]) -> None:
        if self.sink is not None:
            self.sink.write(record)

    def model_started(self, provider: str, model: str, request: ModelRequest) -> ModelCall:
        self.calls += 1
        call = ModelCall(self, provider, model)
        if self.redact is not None:
            history = request.history
            new = history[self.sent :] if len(history) >= self.sent else history
            call.record["input"] = scrub(msgspec.json.decode(_encode(new)), self.redact)
            if self.calls == 1:
                call.record["system_prompt"] = self.redact(request.system_prompt)
            self.sent = len(history)
        if self.spans is not None:
            call.span = self.spans.model_call(self.span, call.record)
        return call

    def headers(self, call: ModelCall) -> dict[str, str]:
        """The trace headers to send the provider for ``call`` (spans on)."""
        assert self.spans is not None
        return self.spans.headers(call.span)

    def model_ended(self, call: ModelCall) -> None:
        record = call.finish()
        for key in ("input_tokens", "output_tokens"):
            self.totals[key] += record.get(key) or 0
        cost = record.get("cost_usd")
        if cost is not None:
            self.cost += cost
            self.priced += 1
        self.emit(record)
        if self.spans is not None:
            self.spans.end(call.span, record)

    def tool_started(self, name: str, call_id: str, effect: str | None) -> ToolCallTrace:
        self.tools += 1
        call = ToolCallTrace(self, name, call_id, effect)
        if self.spans is not None:
            call.span = self.spans.tool_call(self.span, call.record)
        return call

    def tool_ended(self, call: ToolCallTrace, output: ToolOutput | None, arguments: bytes) -> None:
        record = call.finish(output, arguments)
        self.emit(record)
        if self.spans is not None:
            self.spans.end(call.span, record)

    def wait_started(self, kind: str, pending_id: str, tool: str | None) -> WaitTrace:
        """``tool``: the tool the approval is for, when known. A wait for an
        id this trace did not see requested is a re-armed turn's."""
        resumed = pending_id not in self.requested
        wait = WaitTrace(self, kind, pending_id, tool or self.requested.get(pending_id), resumed)
        self.waits[pending_id] = wait
        if self.spans is not None:
            wait.span = self.spans.wait(self.span, wait.record)
        return wait

    def wait_ended(self, wait: WaitTrace, decision: str) -> None:
        """Once per wait: the turn's end closes a wait still open first, so
        no span outlives its turn's."""
        if self.waits.pop(wait.record["pending_id"], None) is not wait:
            return
        record = wait.finish(decision)
        self.waited["waits"] += 1
        self.waited["wait_ms"] = round(self.waited["wait_ms"] + record["duration_ms"], 1)
        self.suspended = self.suspended or decision == "suspended"
        self.emit(record)
        if self.spans is not None:
            self.spans.end(wait.span, record)

    def ended(self, status: str) -> None:
        for wait in list(self.waits.values()):
            self.wait_ended(wait, "interrupted" if status == "aborted" else "suspended")
        if self.suspended and status != "aborted":
            status = "suspended"
        record = {
            "ts": now_iso(),
            "kind": "turn",
            **self.ids,
            "status": status,
            "duration_ms": _ms(time.perf_counter() - self.started),
            "model_calls": self.calls,
            "tool_calls": self.tools,
            **self.waited,
            **self.totals,
            "cost_usd": round(self.cost, 8) if self.priced or not self.calls else None,
            "unpriced_calls": self.calls - self.priced,
        }
        self.emit(record)
        if self.spans is not None:
            self.spans.end(self.span, record)


class ModelCall:
    """A model call as its chunks go by (:meth:`saw` is on the stream's
    path: a type check per chunk, the text kept only with content on)."""

    __slots__ = ("first", "record", "span", "started", "text", "trace", "usage")

    def __init__(self, trace: TurnTrace, provider: str, model: str) -> None:
        self.trace = trace
        self.span: Any = None
        self.started = time.perf_counter()
        self.first: float | None = None
        self.usage: list[UsageChunk] = []
        self.text: list[str] | None = [] if trace.redact is not None else None
        self.record: dict[str, Any] = {
            "ts": "",
            "kind": "model_call",
            **trace.ids,
            "step": trace.step,
            "call": trace.calls,
            "provider": provider,
            "model": model,
            "status": "cancelled",
            "tool_calls": 0,
        }

    def saw(self, chunk: ModelStreamChunk) -> None:
        if self.first is None:
            self.first = time.perf_counter()
        kind = type(chunk)
        if kind is TextDeltaChunk:
            if self.text is not None:
                self.text.append(chunk.text)  # type: ignore[union-attr]
        elif kind is UsageChunk:
            self.usage.append(chunk)  # type: ignore[arg-type]
        elif kind is ToolCallCompleteChunk:
            self._tool_call(chunk)  # type: ignore[arg-type]
        elif kind is CompletedChunk:
            self.record["status"] = "ok"
            self.record["stop_reason"] = chunk.stop_reason  # type: ignore[union-attr]
        elif kind is ErrorChunk:
            self.record["status"] = "error"
            self.record["error_code"] = chunk.code  # type: ignore[union-attr]

    def _tool_call(self, chunk: ToolCallCompleteChunk) -> None:
        self.record["tool_calls"] += 1
        redact = self.trace.redact
        if redact is not None:
            arguments = redact(bytes(chunk.arguments).decode("utf-8", "replace"))
            call = {"call_id": chunk.call_id, "name": chunk.name, "arguments": arguments}
            self.record.setdefault("calls", []).append(call)

    def finish(self) -> dict[str, Any]:
        now = time.perf_counter()
        record = self.record
        record["ts"] = now_iso()
        record["ttfb_ms"] = _ms(self.first - self.started) if self.first is not None else None
        record["duration_ms"] = _ms(now - self.started)
        if self.usage:
            record.update(_usage(self.usage))
        if self.text is not None and self.trace.redact is not None:
            record["output"] = self.trace.redact("".join(self.text))
        return record


def _usage(chunks: list[UsageChunk]) -> dict[str, Any]:
    """The call's usage: summed over its usage chunks; the cost is ``None``
    when a chunk's price is unknown."""
    costs = [c.usage.cost_usd for c in chunks]
    last = chunks[-1]
    return {
        "response_model": last.model,
        "request_id": last.request_id,
        "input_tokens": sum(c.usage.prompt_tokens for c in chunks),
        "output_tokens": sum(c.usage.completion_tokens for c in chunks),
        "reasoning_tokens": sum(c.usage.reasoning_tokens for c in chunks),
        "cache_read_tokens": sum(c.usage.cache_hit_tokens for c in chunks),
        "cost_usd": None if None in costs else round(sum(c or 0.0 for c in costs), 8),
    }


class ToolCallTrace:
    __slots__ = ("record", "span", "started", "trace")

    def __init__(self, trace: TurnTrace, name: str, call_id: str, effect: str | None) -> None:
        self.trace = trace
        self.span: Any = None
        self.started = time.perf_counter()
        self.record: dict[str, Any] = {
            "ts": "",
            "kind": "tool_call",
            **trace.ids,
            "step": trace.step,
            "call_id": call_id,
            "tool": name,
            "effect": effect,
            "status": "cancelled",
        }

    def finish(self, output: ToolOutput | None, arguments: bytes) -> dict[str, Any]:
        record = self.record
        record["ts"] = now_iso()
        record["duration_ms"] = _ms(time.perf_counter() - self.started)
        if output is not None:
            record["status"] = "error" if output.is_error else "ok"
            if output.code:
                record["error_code"] = output.code
            record["output_bytes"] = len(output.output.encode("utf-8", "replace"))
        redact = self.trace.redact
        if redact is not None:
            record["arguments"] = redact(arguments.decode("utf-8", "replace"))
            if output is not None:
                record["output"] = redact(output.output)
        return record


class WaitTrace:
    """A wait for the user's answer; ``kind`` is ``approval`` or ``question``."""

    __slots__ = ("record", "span", "started", "trace")

    def __init__(
        self, trace: TurnTrace, kind: str, pending_id: str, tool: str | None, resumed: bool
    ) -> None:
        self.trace = trace
        self.span: Any = None
        self.started = time.perf_counter()
        self.record: dict[str, Any] = {
            "ts": "",
            "kind": "wait",
            **trace.ids,
            "step": trace.step,
            "wait": kind,
            "pending_id": pending_id,
            "tool": tool,
            "resumed": resumed,
            "decision": None,
        }

    def finish(self, decision: str) -> dict[str, Any]:
        record = self.record
        record["ts"] = now_iso()
        record["decision"] = decision
        record["duration_ms"] = _ms(time.perf_counter() - self.started)
        return record
