"""The fake provider's Kimi dialect: chunks rendered as Moonshot streams
them decode back to the same chunks, and the usage is Moonshot's own
object (inside the last choice, ``cached_tokens`` at its top level)."""

from __future__ import annotations

import msgspec
import pytest

from kun.contracts.model import (
    CompletedChunk,
    ReasoningDeltaChunk,
    TextDeltaChunk,
    ToolCallCompleteChunk,
    ToolCallDeltaChunk,
    UsageChunk,
)
from kun.contracts.usage import UsageSnapshot
from kun.model.wire import materialize
from kun.testing.wire import render_body, render_stream

from ..model.support import decode_everywhere

USAGE = UsageChunk(
    usage=UsageSnapshot(
        prompt_tokens=1000, completion_tokens=40, cache_hit_tokens=700, cache_miss_tokens=300
    ),
    request_id="chatcmpl-k",
    model="kimi-k2.6",
)
CHUNKS = [
    ReasoningDeltaChunk(text="Read it first."),
    ToolCallDeltaChunk(call_id="read_file:0", name="read_file", arguments='{"path":"a.py"}'),
    ToolCallCompleteChunk(
        call_id="read_file:0",
        name="read_file",
        arguments=msgspec.Raw(b'{"path":"a.py"}'),
        arguments_text='{"path":"a.py"}',
    ),
    USAGE,
    CompletedChunk(stop_reason="tool_calls"),
]


def test_a_kimi_stream_round_trips() -> None:
    stream = render_stream("chat_completions", CHUNKS, dialect="kimi")
    assert decode_everywhere("chat_completions", stream).chunks == CHUNKS


def test_the_usage_rides_in_the_last_choice_as_moonshot_sends_it() -> None:
    stream = render_stream("chat_completions", CHUNKS, dialect="kimi")
    last = stream.split(b"\n\n")[-3]
    assert last == (
        b'data: {"id":"chatcmpl-k","model":"kimi-k2.6","object":"chat.completion.chunk",'
        b'"created":0,"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls",'
        b'"usage":{"prompt_tokens":1000,"completion_tokens":40,"total_tokens":1040,'
        b'"cached_tokens":700}}]}'
    )


@pytest.mark.parametrize("text", ["Hi.", ""])
def test_a_kimi_body_materializes_back(text: str) -> None:
    chunks = [ReasoningDeltaChunk(text="Greet."), TextDeltaChunk(text=text), USAGE]
    chunks = [c for c in chunks if not isinstance(c, TextDeltaChunk) or c.text]
    body = render_body("chat_completions", [*chunks, CompletedChunk()], dialect="kimi")
    assert b'"cached_tokens":700' in body
    assert materialize("chat_completions", body) == [*chunks, CompletedChunk()]
