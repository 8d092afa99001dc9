"""OpenAI Responses fixtures, each decoded whole and split at every byte."""

from __future__ import annotations

from kun.contracts.model import (
    CompletedChunk,
    ReasoningDeltaChunk,
    TextDeltaChunk,
    ToolCallDeltaChunk,
    UsageChunk,
    WireFormat,
)
from kun.contracts.usage import UsageSnapshot
from kun.model.sse import SSEEvent
from kun.model.wire import ResponsesDecoder

from .support import calls, decode_fixture, error, stop_reason, text, usage

RS: WireFormat = "responses"


def test_text_with_usage() -> None:
    run = decode_fixture(RS, "resp_text.sse")
    assert run.chunks == [
        TextDeltaChunk(text="Hi"),
        TextDeltaChunk(text=" there!"),
        UsageChunk(
            usage=UsageSnapshot(prompt_tokens=37, completion_tokens=11, cache_miss_tokens=37),
            request_id="resp_67c9fdcecf488190bdd9a0409de3a1ec07b8b0ad4e5eb654",
            model="gpt-4.1-2025-04-14",
        ),
        CompletedChunk(stop_reason="stop"),
    ]


def test_reasoning_summary_then_function_call() -> None:
    run = decode_fixture(RS, "resp_reasoning_tool_call.sse")
    assert run.chunks[:2] == [
        ReasoningDeltaChunk(text="**Checking weather**"),
        ReasoningDeltaChunk(text=" for Paris."),
    ]
    deltas = [c for c in run.chunks if isinstance(c, ToolCallDeltaChunk)]
    assert deltas[0] == ToolCallDeltaChunk(call_id="call_12345xyz", name="get_weather", index=0)
    assert calls(run.chunks) == [
        ("call_12345xyz", "get_weather", {"location": "Paris, France"}, "none")
    ]
    found = usage(run.chunks)
    assert found is not None
    assert found.usage == UsageSnapshot(
        prompt_tokens=2100,
        completion_tokens=150,
        reasoning_tokens=128,
        cache_hit_tokens=1920,
        cache_miss_tokens=180,
    )
    assert stop_reason(run.chunks) == "tool_calls"


def test_parallel_calls_settle_per_item() -> None:
    run = decode_fixture(RS, "resp_parallel_calls.sse")
    assert calls(run.chunks) == [
        ("call_b", "read_file", {"path": "b"}, "none"),
        ("call_a", "read_file", {"path": "a"}, "none"),
    ]
    assert stop_reason(run.chunks) == "tool_calls"


def test_incomplete_for_max_output_tokens_is_length() -> None:
    run = decode_fixture(RS, "resp_incomplete.sse")
    assert text(run.chunks) == "Once upon"
    assert stop_reason(run.chunks) == "length"


def test_failed_response() -> None:
    failure = error(decode_fixture(RS, "resp_failed.sse").chunks)
    assert (failure.code, failure.message) == (
        "server_error",
        "The model failed to generate a response.",
    )


def test_error_event() -> None:
    failure = error(decode_fixture(RS, "resp_error_event.sse").chunks)
    assert failure.code == "context_length_exceeded"


def test_truncated_stream_does_not_settle_pending_calls() -> None:
    run = decode_fixture(RS, "resp_truncated.sse")
    assert calls(run.chunks) == []
    assert error(run.chunks).code == "stream_truncated"


def test_done_sentinel_and_unknown_events_are_ignored() -> None:
    decoder = ResponsesDecoder()
    assert decoder.feed(SSEEvent(b'{"type":"response.future_event","x":1}')) == []
    assert decoder.feed(SSEEvent(b"[DONE]")) == []
    assert error(decoder.finish()).code == "stream_truncated"
