"""W3C trace context: a caller's ``traceparent`` on ``POST …/turns`` makes
kun's turn span a child of the caller's span; with tracing on, each model
call's span goes to the provider as ``traceparent``; with it off, nothing
is sent."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from kun.contracts.model import CompletedChunk, TextDeltaChunk
from kun.model.client import HttpModelClient
from kun.model.scripted import text_reply
from kun.observe import setup
from kun.observe.observer import Observer
from kun.observe.otel import OtelSpans
from kun.testing.fake_provider import FakeProvider, FakeResponse
from tests.observe.support import Lines, observed, run_turn, until
from tests.server.support import api

pytestmark = pytest.mark.anyio
TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER = "00f067aa0ba902b7"
ANSWER = FakeResponse(chunks=(TextDeltaChunk(text="hi"), CompletedChunk(stop_reason="stop")))


def _exporting() -> tuple[InMemorySpanExporter, OtelSpans]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return exporter, OtelSpans(provider)


def _turns(exporter: InMemorySpanExporter) -> list[ReadableSpan]:
    return [s for s in exporter.get_finished_spans() if s.name == "invoke_agent kun"]


async def test_a_caller_traceparent_makes_the_turn_span_its_child(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    exporter, spans = _exporting()
    monkeypatch.setenv("KUN_OTEL", "1")
    monkeypatch.setattr(setup, "_otel_spans", lambda: spans)
    async with api(tmp_path, [text_reply("one"), text_reply("two")]) as client:
        thread_id = await client.new_thread()
        header = {"traceparent": f"00-{TRACE}-{CALLER}-01", "tracestate": "vendor=x"}
        response = await client.client.post(
            f"/v1/threads/{thread_id}/turns", json={"text": "hi"}, headers=header
        )
        assert response.status_code == 202, response.text
        await client.wait(thread_id, response.json()["turn_id"])
        await client.wait(thread_id, await client.start(thread_id, "again"))
        await until(lambda: len(_turns(exporter)) == 2)
    traced, untraced = sorted(_turns(exporter), key=lambda s: s.start_time or 0)
    assert traced.parent is not None and traced.parent.is_remote
    assert traced.parent.span_id == int(CALLER, 16)
    assert traced.context is not None and traced.context.trace_id == int(TRACE, 16)
    assert traced.context.trace_state.get("vendor") == "x"
    assert untraced.parent is None
    assert untraced.context is not None and untraced.context.trace_id != int(TRACE, 16)


async def _provider_headers(tmp_path: Path, observer: Observer | None) -> dict[str, str]:
    async with FakeProvider([ANSWER], format="chat_completions") as provider:
        model = HttpModelClient("fake", "m", provider.base_url)
        async with model, observed(tmp_path, observer, model=model) as (service, thread_id):
            turn = await run_turn(service, thread_id, "hi")
        assert turn.status == "completed"
        (request,) = provider.requests
    return request.headers


async def test_with_tracing_on_the_provider_gets_the_model_call_span(tmp_path: Path) -> None:
    exporter, spans = _exporting()
    headers = await _provider_headers(tmp_path, Observer(spans=spans))
    (call,) = [s for s in exporter.get_finished_spans() if s.name.startswith("chat")]
    context = call.context
    assert context is not None
    flags = f"{context.trace_flags:02x}"
    assert headers["traceparent"] == f"00-{context.trace_id:032x}-{context.span_id:016x}-{flags}"


@pytest.mark.parametrize("observing", ["no observer", "logs only"])
async def test_with_tracing_off_no_traceparent_is_sent(tmp_path: Path, observing: str) -> None:
    observer = None if observing == "no observer" else Observer(sink=Lines())
    headers = await _provider_headers(tmp_path, observer)
    assert "traceparent" not in headers and "tracestate" not in headers
