"""Anthropic Messages fixtures, each decoded whole and split at every byte."""

from __future__ import annotations

import msgspec

from kun.contracts.model import (
    CompletedChunk,
    ReasoningDeltaChunk,
    TextDeltaChunk,
    ToolCallCompleteChunk,
    ToolCallDeltaChunk,
    UsageChunk,
    WireFormat,
)
from kun.contracts.usage import UsageSnapshot
from kun.model.sse import SSEEvent
from kun.model.wire import MessagesDecoder

from .support import (
    calls,
    decode_everywhere,
    decode_fixture,
    error,
    fixture,
    stop_reason,
    text,
    usage,
)

MS: WireFormat = "messages"


def test_text_with_ping() -> None:
    run = decode_fixture(MS, "msg_text.sse")
    assert run.chunks == [
        TextDeltaChunk(text="Hello"),
        TextDeltaChunk(text="!"),
        UsageChunk(
            usage=UsageSnapshot(prompt_tokens=25, completion_tokens=15, cache_miss_tokens=25),
            request_id="msg_01XFDUDYJgAACzvnptvVoYEL",
            model="claude-sonnet-4-5-20250929",
        ),
        CompletedChunk(stop_reason="stop"),
    ]
    assert run.decoder.keepalives == 1


def test_thinking_signature_text_and_tool_use() -> None:
    run = decode_fixture(MS, "msg_thinking_tool_use.sse")
    assert run.chunks[:4] == [
        ReasoningDeltaChunk(text="I need the weather"),
        ReasoningDeltaChunk(text=" in San Francisco."),
        ReasoningDeltaChunk(
            text="", signature="EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"
        ),
        TextDeltaChunk(text="Let me check."),
    ]
    assert run.chunks[4] == ToolCallDeltaChunk(
        call_id="toolu_01T1x1fJ34qAmk2tNTrN7Up6", name="get_weather", index=0
    )
    assert calls(run.chunks) == [
        ("toolu_01T1x1fJ34qAmk2tNTrN7Up6", "get_weather", {"location": "San Francisco, CA"}, "none")
    ]
    assert stop_reason(run.chunks) == "tool_calls"


def test_cache_read_and_creation_usage() -> None:
    found = usage(decode_fixture(MS, "msg_cache_usage.sse").chunks)
    assert found is not None
    assert found.usage == UsageSnapshot(
        prompt_tokens=31512,
        completion_tokens=42,
        cache_hit_tokens=30000,
        cache_miss_tokens=1512,
        cache_write_tokens=1500,
    )


def test_parallel_tool_use_blocks_settle_at_block_stop() -> None:
    run = decode_fixture(MS, "msg_parallel_tool_use.sse")
    assert calls(run.chunks) == [
        ("toolu_A", "read_file", {"path": "a.py"}, "none"),
        ("toolu_B", "list_dir", {}, "empty"),
    ]
    complete = [i for i, c in enumerate(run.chunks) if isinstance(c, ToolCallCompleteChunk)]
    assert complete[0] < 3
    assert stop_reason(run.chunks) == "tool_calls"


def test_max_tokens_inside_tool_input() -> None:
    run = decode_fixture(MS, "msg_max_tokens_in_tool_input.sse")
    raw = '{"path": "big.txt", "content": "aaaa'
    assert calls(run.chunks) == [("toolu_Max", "write_file", {"__raw": raw}, "raw")]
    assert stop_reason(run.chunks) == "tool_calls"


def test_truncated_stream() -> None:
    run = decode_fixture(MS, "msg_truncated.sse")
    assert text(run.chunks) == "Half an answ"
    failure = error(run.chunks)
    assert failure.code == "stream_truncated"
    assert usage(run.chunks) is not None


def test_whole_input_at_block_start_without_deltas() -> None:
    decoder = MessagesDecoder()
    start = {
        "type": "content_block_start",
        "index": 0,
        "content_block": {"type": "tool_use", "id": "toolu_W", "name": "f", "input": {"a": 1}},
    }
    decoder.feed(SSEEvent(msgspec.json.encode(start)))
    done = decoder.feed(SSEEvent(b'{"type":"content_block_stop","index":0}'))
    assert calls(done) == [("toolu_W", "f", {"a": 1}, "none")]


def test_stop_reason_mapping() -> None:
    for given, expected in [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("refusal", "refusal"),
    ]:
        decoder = MessagesDecoder()
        decoder.feed(
            SSEEvent(
                b'{"type":"message_delta","delta":{"stop_reason":"%s"},"usage":{}}' % given.encode()
            )
        )
        assert stop_reason(decoder.feed(SSEEvent(b'{"type":"message_stop"}'))) == expected


def test_invalid_utf8_in_a_delta_is_replaced_and_non_json_skipped() -> None:
    data = fixture("msg_text.sse").replace(b'"Hello"', b'"He\xffllo"')
    data = data.replace(b'event: ping\ndata: {"type": "ping"}', b"event: ping\ndata: {oops")
    run = decode_everywhere(MS, data)
    assert text(run.chunks) == "He\ufffdllo!"
    assert (run.decoder.skipped, run.decoder.keepalives) == (1, 0)
