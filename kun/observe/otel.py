"""OpenTelemetry spans of turns, model calls and tool calls (``kun[otel]``).

Imported only when tracing is on (:func:`kun.observe.setup.observing`):
with it off, kun never imports OpenTelemetry. The span tree of a turn is

* ``invoke_agent kun`` (the turn): ``gen_ai.operation.name`` ``invoke_agent``,
  ``gen_ai.agent.name`` ``kun``, ``gen_ai.conversation.id`` (the thread);
* ``chat {model}`` (a model call, kind CLIENT): ``gen_ai.operation.name``
  ``chat``, ``gen_ai.provider.name`` and the older ``gen_ai.system``,
  ``gen_ai.request.model``, ``gen_ai.response.model``, ``gen_ai.response.id``,
  ``gen_ai.response.finish_reasons``, ``gen_ai.usage.input_tokens``,
  ``gen_ai.usage.output_tokens``;
* ``execute_tool {name}`` (a tool call): ``gen_ai.operation.name``
  ``execute_tool``, ``gen_ai.tool.name``, ``gen_ai.tool.call.id``,
  ``gen_ai.tool.type`` ``function``;
* ``wait_for_user approval`` / ``wait_for_user question`` (the turn waiting
  for the user's answer): ``kun.wait``, ``kun.pending_id``, ``kun.tool``,
  ``kun.decision`` (``approved``, ``denied``, ``answered``, ``interrupted``,
  ``suspended``...), ``kun.duration_ms`` and ``kun.resumed`` (the wait of a
  turn re-armed after a restart: a child of that process's turn span);

each a child of its turn, with ``kun.*`` attributes for the rest of its
JSON-line record (step, timings, cost) and ``error.type`` plus an error
status when it failed. Attributes carry no prompt or output, even with
``--log-content``.

A tracer provider someone already installed (``opentelemetry-instrument``,
an embedding application) is used as it is. Otherwise kun sets up the SDK's
with the exporter ``OTEL_TRACES_EXPORTER`` names (the SDK's variable):
``otlp`` (its default; needs ``opentelemetry-exporter-otlp-proto-http``,
which reads ``OTEL_EXPORTER_OTLP_ENDPOINT`` and the other standard
variables), ``console`` (JSON spans on stderr) or ``none``; the resource takes
``OTEL_SERVICE_NAME`` / ``OTEL_RESOURCE_ATTRIBUTES``, with ``service.name``
``kun`` by default. Model calls are measured too
(:mod:`kun.observe.otel_metrics`).

The turn span of a turn started over HTTP with a ``traceparent`` header is
a child of the caller's span, and each model call's span goes to the
provider as ``traceparent`` (:mod:`kun.observe.propagation`), both through
the global propagator (``OTEL_PROPAGATORS``; W3C trace context and baggage
by default).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any

from opentelemetry import propagate, trace
from opentelemetry.trace import Span, SpanKind, StatusCode, TracerProvider

from kun.observe.errors import ObserveError
from kun.observe.otel_metrics import GenAiMetrics

__all__ = ["OtelSpans", "provider_from_env"]

_TURN_KEYS = (
    "status", "model_calls", "tool_calls", "waits", "wait_ms",
    "input_tokens", "output_tokens", "cost_usd", "unpriced_calls",
)  # fmt: skip
_MODEL_KEYS = ("step", "call", "ttfb_ms", "duration_ms", "cost_usd", "tool_calls")
_TOOL_KEYS = ("step", "effect", "duration_ms", "output_bytes")
_WAIT_KEYS = ("step", "wait", "pending_id", "tool", "decision", "resumed", "duration_ms")
_KEYS = {"turn": _TURN_KEYS, "model_call": _MODEL_KEYS, "wait": _WAIT_KEYS}
_NOT_FAILED = frozenset({"ok", "completed", "suspended"})
OTLP_PACKAGE = "opentelemetry-exporter-otlp-proto-http"


class OtelSpans:
    def __init__(
        self, provider: TracerProvider, *, owned: bool = False, metrics: GenAiMetrics | None = None
    ) -> None:
        """``owned``: kun made ``provider`` and shuts it down on close;
        ``metrics``: where model calls are also measured."""
        self.provider = provider
        self.owned = owned
        self.metrics = metrics
        self.tracer = provider.get_tracer("kun")

    def turn(self, record: dict[str, Any], caller: Mapping[str, str] | None = None) -> Span:
        return self.tracer.start_span(
            "invoke_agent kun",
            context=propagate.extract(caller) if caller else None,
            kind=SpanKind.INTERNAL,
            attributes={
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": "kun",
                "gen_ai.conversation.id": record["thread_id"],
                "gen_ai.provider.name": record["provider"],
                "gen_ai.request.model": record["model"],
                "kun.turn_id": record["turn_id"],
            },
        )

    def model_call(self, parent: Span, record: dict[str, Any]) -> Span:
        return self.tracer.start_span(
            f"chat {record['model']}",
            context=trace.set_span_in_context(parent),
            kind=SpanKind.CLIENT,
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": record["provider"],
                "gen_ai.system": record["provider"],
                "gen_ai.request.model": record["model"],
                "gen_ai.conversation.id": record["thread_id"],
            },
        )

    def tool_call(self, parent: Span, record: dict[str, Any]) -> Span:
        return self.tracer.start_span(
            f"execute_tool {record['tool']}",
            context=trace.set_span_in_context(parent),
            kind=SpanKind.INTERNAL,
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": record["tool"],
                "gen_ai.tool.call.id": record["call_id"],
                "gen_ai.tool.type": "function",
            },
        )

    def headers(self, span: Span) -> dict[str, str]:
        carrier: dict[str, str] = {}
        propagate.inject(carrier, context=trace.set_span_in_context(span))
        return carrier

    def wait(self, parent: Span, record: dict[str, Any]) -> Span:
        return self.tracer.start_span(
            f"wait_for_user {record['wait']}",
            context=trace.set_span_in_context(parent),
            kind=SpanKind.INTERNAL,
            attributes={"gen_ai.conversation.id": record["thread_id"]},
        )

    def end(self, span: Span, record: dict[str, Any]) -> None:
        kind = record["kind"]
        if kind == "model_call":
            _model_attributes(span, record)
            if self.metrics is not None:
                self.metrics.model_call(record)
        for key in _KEYS.get(kind, _TOOL_KEYS):
            value = record.get(key)
            if value is not None:
                span.set_attribute(f"kun.{key}", value)
        failed = record.get("status", "ok") not in _NOT_FAILED or record.get("decision") == "error"
        if failed:
            span.set_attribute(
                "error.type", record.get("error_code") or record.get("status", "error")
            )
            span.set_status(StatusCode.ERROR)
        span.end()

    def close(self) -> None:
        if self.metrics is not None:
            self.metrics.close()
        if self.owned:
            shutdown = getattr(self.provider, "shutdown", None)
            if shutdown is not None:
                shutdown()


def _model_attributes(span: Span, record: dict[str, Any]) -> None:
    pairs = {
        "gen_ai.response.model": record.get("response_model"),
        "gen_ai.response.id": record.get("request_id"),
        "gen_ai.usage.input_tokens": record.get("input_tokens"),
        "gen_ai.usage.output_tokens": record.get("output_tokens"),
    }
    for key, value in pairs.items():
        if value is not None:
            span.set_attribute(key, value)
    if record.get("stop_reason"):
        span.set_attribute("gen_ai.response.finish_reasons", [record["stop_reason"]])


def provider_from_env() -> tuple[TracerProvider, bool]:
    """The tracer provider to use and whether kun made it (see the module
    docstring)."""
    current = trace.get_tracer_provider()
    if not isinstance(current, trace.ProxyTracerProvider | trace.NoOpTracerProvider):
        return current, False
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider as SdkProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter
    except ImportError as exc:
        raise ObserveError(
            "tracing is on but the OpenTelemetry SDK is not installed: "
            "pip install 'kun[otel]' (or set otel = false)"
        ) from exc
    provider = SdkProvider(resource=Resource.create({"service.name": "kun"}))
    name = os.environ.get("OTEL_TRACES_EXPORTER", "otlp").strip().lower()
    if name == "console":
        # stderr: stdout is the transcript, or the events of kun run --json
        provider.add_span_processor(BatchSpanProcessor(ConsoleSpanExporter(out=sys.stderr)))
    elif name == "otlp":
        provider.add_span_processor(BatchSpanProcessor(_otlp_exporter()))
    elif name != "none":
        raise ObserveError(f"OTEL_TRACES_EXPORTER={name!r}: kun knows otlp, console and none")
    return provider, True


def _otlp_exporter() -> Any:
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import (  # type: ignore[import-not-found,unused-ignore]
            OTLPSpanExporter,
        )
    except ImportError as exc:
        raise ObserveError(
            f"tracing exports over OTLP, but {OTLP_PACKAGE} is not installed: "
            f"pip install {OTLP_PACKAGE} (or set OTEL_TRACES_EXPORTER=console)"
        ) from exc
    return OTLPSpanExporter()
