"""kun.testing.wire in memory: the renderers invert the decoders, split at
every byte, including the shorthands and knobs the fake provider relies on."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
import pytest

from kun.contracts.model import (
    CompletedChunk,
    ErrorChunk,
    ModelStreamChunk,
    ReasoningDeltaChunk,
    TextDeltaChunk,
    ToolCallCompleteChunk,
    ToolCallDeltaChunk,
    UsageChunk,
    WireFormat,
)
from kun.contracts.usage import UsageSnapshot
from kun.model.toolcalls import SYNTHETIC_ID_PREFIX
from kun.testing.wire import render_stream

from ..model.support import decode_everywhere

FORMATS: list[WireFormat] = ["chat_completions", "responses", "messages"]


def settled(call_id: str, name: str, arguments: str, index: int = 0) -> ToolCallCompleteChunk:
    return ToolCallCompleteChunk(
        call_id=call_id,
        name=name,
        arguments=msgspec.Raw(arguments.encode()),
        arguments_text=arguments,
        index=index,
    )


def decoded(format: WireFormat, chunks: Sequence[ModelStreamChunk], **knobs: bool) -> list[object]:
    return list(decode_everywhere(format, render_stream(format, chunks, **knobs)).chunks)


@pytest.mark.parametrize("format", FORMATS)
def test_errors_and_usage_with_cost_round_trip(format: WireFormat) -> None:
    usage = UsageSnapshot(
        prompt_tokens=50,
        completion_tokens=5,
        cache_hit_tokens=10,
        cache_miss_tokens=40,
        cost_usd=0.25,
    )
    text: list[ModelStreamChunk] = [TextDeltaChunk(text="x")]
    ok = [*text, UsageChunk(usage=usage, model="m"), CompletedChunk()]
    assert decoded(format, ok) == ok
    failed = [*text, ErrorChunk(message="overloaded", code="overloaded_error")]
    assert decoded(format, failed) == failed


USAGES: dict[WireFormat, UsageSnapshot] = {
    "chat_completions": UsageSnapshot(
        prompt_tokens=90,
        completion_tokens=9,
        reasoning_tokens=4,
        cache_hit_tokens=30,
        cache_miss_tokens=60,
        cache_write_tokens=20,
    ),
    "responses": UsageSnapshot(
        prompt_tokens=90,
        completion_tokens=9,
        reasoning_tokens=4,
        cache_hit_tokens=30,
        cache_miss_tokens=55,
    ),
    "messages": UsageSnapshot(
        prompt_tokens=90,
        completion_tokens=9,
        cache_hit_tokens=30,
        cache_miss_tokens=60,
        cache_write_tokens=20,
    ),
}


@pytest.mark.parametrize(("format", "usage"), USAGES.items())
def test_every_usage_field_the_format_carries_round_trips(
    format: WireFormat, usage: UsageSnapshot
) -> None:
    chunks: list[ModelStreamChunk] = [
        UsageChunk(usage=usage, request_id="r", model="m"),
        CompletedChunk(),
    ]
    assert decoded(format, chunks) == chunks


def test_index_only_ids_then_a_late_real_id() -> None:
    synthetic = f"{SYNTHETIC_ID_PREFIX}0"
    chunks: list[ModelStreamChunk] = [
        ToolCallDeltaChunk(call_id=synthetic, name="read", arguments='{"a":'),
        ToolCallDeltaChunk(call_id="call_real", arguments="1}"),
        settled("call_real", "read", '{"a":1}'),
        CompletedChunk(stop_reason="tool_calls"),
    ]
    body = render_stream("chat_completions", chunks)
    assert body.count(b'"id":"call_real"') == 1
    assert synthetic.encode() not in body
    assert decoded("chat_completions", chunks) == chunks


@pytest.mark.parametrize("format", FORMATS)
def test_a_call_given_only_settled_is_streamed_whole(format: WireFormat) -> None:
    """One delta on chat completions; the others open the call, then send
    its arguments, as their APIs do."""
    call = settled("c1", "ls", '{"dir":"."}')
    got = decoded(format, [call, CompletedChunk(stop_reason="tool_calls")])
    deltas = [ToolCallDeltaChunk(call_id="c1", name="ls", arguments='{"dir":"."}')]
    if format != "chat_completions":
        deltas = [
            ToolCallDeltaChunk(call_id="c1", name="ls"),
            ToolCallDeltaChunk(call_id="c1", arguments='{"dir":"."}'),
        ]
    assert got == [*deltas, call, CompletedChunk(stop_reason="tool_calls")]


@pytest.mark.parametrize("format", FORMATS)
def test_no_terminal_chunk_renders_a_truncated_stream(format: WireFormat) -> None:
    got = decoded(format, [TextDeltaChunk(text="half")])
    assert got[0] == TextDeltaChunk(text="half")
    last = got[-1]
    assert isinstance(last, ErrorChunk)
    assert last.code == "stream_truncated"


@pytest.mark.parametrize("format", FORMATS)
@pytest.mark.parametrize("stop_reason", ["stop", "length", "content_filter"])
def test_stop_reasons_survive_each_format(format: WireFormat, stop_reason: str) -> None:
    chunks: list[ModelStreamChunk] = [
        TextDeltaChunk(text="t"),
        CompletedChunk(stop_reason=stop_reason),
    ]
    assert decoded(format, chunks) == chunks


@pytest.mark.parametrize("format", ["chat_completions", "messages"])
def test_without_finish_reason_the_end_marker_completes_with_stop(format: WireFormat) -> None:
    chunks: list[ModelStreamChunk] = [
        TextDeltaChunk(text="t"),
        CompletedChunk(stop_reason="length"),
    ]
    assert decoded(format, chunks, finish_reason=False)[-1] == CompletedChunk(stop_reason="stop")


@pytest.mark.parametrize(
    ("format", "chunk"),
    [
        ("chat_completions", ReasoningDeltaChunk(text="", signature="s")),
        ("responses", ReasoningDeltaChunk(text="", signature="s")),
        ("responses", ToolCallDeltaChunk(call_id="c", name="more")),
        ("messages", ToolCallDeltaChunk(call_id="c", name="more")),
    ],
)
def test_what_a_format_cannot_carry_is_refused(format: WireFormat, chunk: ModelStreamChunk) -> None:
    opening = ToolCallDeltaChunk(call_id="c", name="split_")
    with pytest.raises(ValueError, match="cannot"):
        render_stream(format, [opening, chunk])


def test_a_tool_name_in_pieces_streams_on_chat_completions() -> None:
    chunks: list[ModelStreamChunk] = [
        ToolCallDeltaChunk(call_id="c", name="browser_"),
        ToolCallDeltaChunk(call_id="c", name="open"),
        ToolCallCompleteChunk(call_id="c", name="browser_open", repair="empty"),
        CompletedChunk(stop_reason="tool_calls"),
    ]
    assert decoded("chat_completions", chunks) == chunks
