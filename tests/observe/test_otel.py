"""The OpenTelemetry spans of a real turn, read back from the SDK's
in-memory exporter: the turn is the parent of its model calls and its tool
call, each with the GenAI semantic-convention attributes."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)
from opentelemetry.trace import SpanKind, StatusCode

from kun.observe.observer import Observer
from kun.observe.otel import OtelSpans
from tests.observe.support import PROMPT, SECRET, observed, run_turn

pytestmark = pytest.mark.anyio


async def _spans(tmp_path: Path) -> tuple[list[ReadableSpan], str, str]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    observer = Observer(spans=OtelSpans(provider))
    async with observed(tmp_path, observer) as (service, thread_id):
        turn = await run_turn(service, thread_id, f"{PROMPT} {SECRET}")
    observer.close()
    return list(exporter.get_finished_spans()), thread_id, turn.turn_id


async def test_the_turn_span_is_the_parent_of_model_and_tool_spans(tmp_path: Path) -> None:
    spans, thread_id, turn_id = await _spans(tmp_path)
    names = sorted(s.name for s in spans)
    assert names == ["chat scripted", "chat scripted", "execute_tool peek", "invoke_agent kun"]
    (turn,) = [s for s in spans if s.name == "invoke_agent kun"]
    assert turn.parent is None
    for span in spans:
        assert span.context is not None and turn.context is not None
        assert span.context.trace_id == turn.context.trace_id
        if span is not turn:
            assert span.parent is not None and span.parent.span_id == turn.context.span_id
            assert turn.start_time is not None and span.start_time is not None
            assert turn.end_time is not None and span.end_time is not None
            assert turn.start_time <= span.start_time <= span.end_time <= turn.end_time
    assert turn.attributes is not None
    assert turn.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert turn.attributes["gen_ai.conversation.id"] == thread_id
    assert turn.attributes["kun.turn_id"] == turn_id
    assert turn.attributes["kun.status"] == "completed"


async def test_model_and_tool_spans_carry_the_genai_attributes(tmp_path: Path) -> None:
    spans, _, _ = await _spans(tmp_path)
    first, second = sorted((s for s in spans if s.name.startswith("chat")), key=_start)
    assert first.kind is SpanKind.CLIENT
    attributes = dict(first.attributes or {})
    assert attributes["gen_ai.operation.name"] == "chat"
    assert attributes["gen_ai.provider.name"] == "scripted"
    assert attributes["gen_ai.system"] == "scripted"
    assert attributes["gen_ai.request.model"] == "scripted"
    assert attributes["gen_ai.response.model"] == "scripted-1-20261201"
    assert attributes["gen_ai.usage.input_tokens"] == 120
    assert attributes["gen_ai.usage.output_tokens"] == 15
    assert attributes["gen_ai.response.finish_reasons"] == ("tool_calls",)
    assert attributes["kun.step"] == 0
    assert dict(second.attributes or {})["kun.step"] == 1
    (tool,) = [s for s in spans if s.name.startswith("execute_tool")]
    tool_attributes = dict(tool.attributes or {})
    assert tool_attributes["gen_ai.operation.name"] == "execute_tool"
    assert tool_attributes["gen_ai.tool.name"] == "peek"
    assert tool_attributes["gen_ai.tool.call.id"] == "call_peek"
    assert tool.status.status_code is StatusCode.UNSET
    everything = repr([dict(s.attributes or {}) for s in spans])
    assert SECRET not in everything and "Zanzibar" not in everything


def _start(span: ReadableSpan) -> int:
    return span.start_time or 0
