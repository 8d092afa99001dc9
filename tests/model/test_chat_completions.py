"""Chat completions fixtures, each decoded whole and split at every byte."""

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
    WireFormat,
)
from kun.contracts.usage import UsageSnapshot
from kun.model.errors import StreamProtocolError
from kun.model.sse import SSEEvent
from kun.model.wire import ChatCompletionsDecoder

from .support import (
    Run,
    calls,
    decode_fixture,
    error,
    fixture,
    reasoning,
    splits,
    stop_reason,
    text,
    usage,
)

CC: WireFormat = "chat_completions"


def test_plain_text() -> None:
    run = decode_fixture(CC, "cc_plain_text.sse")
    assert run.chunks == [
        TextDeltaChunk(text="Hello"),
        TextDeltaChunk(text=", world"),
        TextDeltaChunk(text="!"),
        UsageChunk(
            usage=UsageSnapshot(prompt_tokens=19, completion_tokens=4, cache_miss_tokens=19),
            request_id="chatcmpl-AbC123",
            model="gpt-4o-2024-08-06",
        ),
        CompletedChunk(stop_reason="stop"),
    ]
    assert run.decoder.skipped == 0


@pytest.mark.parametrize("name", ["cc_crlf.sse", "cc_cr_only.sse", "cc_bom.sse"])
def test_framing_variants_decode_like_lf(name: str) -> None:
    source = "cc_usage_absent.sse" if name == "cc_bom.sse" else "cc_plain_text.sse"
    assert decode_fixture(CC, name).chunks == Run(CC, [fixture(source)]).chunks


def test_crlf_split_between_cr_and_lf_is_one_line_end() -> None:
    data = fixture("cc_crlf.sse")
    cut = data.index(b"\r\n") + 1
    assert Run(CC, [data[:cut], data[cut:]]).chunks == Run(CC, [data]).chunks


def test_reasoning_then_text() -> None:
    run = decode_fixture(CC, "cc_reasoning_then_text.sse")
    assert run.chunks[:3] == [
        ReasoningDeltaChunk(text="The user"),
        ReasoningDeltaChunk(text=" wants 2+2."),
        TextDeltaChunk(text="4"),
    ]
    found = usage(run.chunks)
    assert found is not None
    assert found.usage.reasoning_tokens == 18
    assert found.usage.cache_miss_tokens == 12
    assert stop_reason(run.chunks) == "stop"


def test_reasoning_field_and_provider_cost() -> None:
    run = decode_fixture(CC, "cc_reasoning_field.sse")
    assert reasoning(run.chunks) == "Thinking."
    assert text(run.chunks) == "Done."
    found = usage(run.chunks)
    assert found is not None
    assert found.usage.cost_usd == pytest.approx(0.0000123)
    assert found.usage.reasoning_tokens == 4


def test_one_tool_call_in_many_fragments() -> None:
    run = decode_fixture(CC, "cc_tool_call_fragments.sse")
    deltas = [c for c in run.chunks if isinstance(c, ToolCallDeltaChunk)]
    assert deltas[0] == ToolCallDeltaChunk(
        call_id="call_9oOUGn7XVM1S9AdJeglwUv1Z", name="get_current_weather", index=0
    )
    assert "".join(d.arguments for d in deltas) == ('{"location": "Boston, MA", "unit": "celsius"}')
    complete = [c for c in run.chunks if isinstance(c, ToolCallCompleteChunk)]
    assert complete == [
        ToolCallCompleteChunk(
            call_id="call_9oOUGn7XVM1S9AdJeglwUv1Z",
            name="get_current_weather",
            arguments=msgspec.Raw(b'{"location":"Boston, MA","unit":"celsius"}'),
            repair="none",
            arguments_text='{"location": "Boston, MA", "unit": "celsius"}',
            index=0,
        )
    ]
    assert stop_reason(run.chunks) == "tool_calls"
    found = usage(run.chunks)
    assert found is not None
    assert (found.usage.cache_hit_tokens, found.usage.cache_miss_tokens) == (64, 18)


def test_two_parallel_calls_interleaved() -> None:
    run = decode_fixture(CC, "cc_parallel_interleaved.sse")
    assert calls(run.chunks) == [
        ("call_A", "read_file", {"path": "a.py"}, "none"),
        ("call_B", "list_dir", {"dir": "src"}, "none"),
    ]
    deltas = [c for c in run.chunks if isinstance(c, ToolCallDeltaChunk)]
    assert [d.index for d in deltas] == [0, 1, 0, 1, 0, 1]
    assert stop_reason(run.chunks) == "tool_calls"


def test_index_only_then_late_real_id() -> None:
    run = decode_fixture(CC, "cc_late_real_id.sse")
    deltas = [c for c in run.chunks if isinstance(c, ToolCallDeltaChunk)]
    assert [d.call_id for d in deltas] == [
        "__kun_stream_tool_call_index_0",
        "__kun_stream_tool_call_index_0",
        "call_late_42",
    ]
    assert {d.index for d in deltas} == {0}
    assert calls(run.chunks) == [("call_late_42", "search", {"q": "kun"}, "none")]


def test_late_id_colliding_with_another_pending_call_is_a_protocol_error() -> None:
    data = fixture("cc_late_id_collision.sse")
    for pieces in [[data], *splits(data)]:
        with pytest.raises(StreamProtocolError, match="collides"):
            Run(CC, pieces)


def test_bare_done_flushes_named_pending_calls() -> None:
    run = decode_fixture(CC, "cc_bare_done.sse")
    assert calls(run.chunks) == [("call_bare", "get_time", {"tz": "UTC"}, "none")]
    assert stop_reason(run.chunks) == "tool_calls"
    assert usage(run.chunks) is None


def test_truncated_arguments_become_raw() -> None:
    run = decode_fixture(CC, "cc_truncated_arguments.sse")
    raw = '{"path": "a.txt", "content": "line one\\nline tw'
    assert calls(run.chunks) == [("call_00_len", "write_file", {"__raw": raw}, "raw")]
    assert stop_reason(run.chunks) == "tool_calls"
    found = usage(run.chunks)
    assert found is not None
    assert found.usage == UsageSnapshot(
        prompt_tokens=500, completion_tokens=8192, cache_hit_tokens=384, cache_miss_tokens=116
    )


def test_fenced_arguments() -> None:
    run = decode_fixture(CC, "cc_fenced_arguments.sse")
    assert calls(run.chunks) == [("call_fence", "edit", {"file": "x.py", "line": 3}, "fence")]


def test_usage_absent() -> None:
    run = decode_fixture(CC, "cc_usage_absent.sse")
    assert run.chunks == [TextDeltaChunk(text="Hi"), CompletedChunk(stop_reason="stop")]


def test_keepalive_comments_are_counted_not_decoded() -> None:
    run = decode_fixture(CC, "cc_keepalive_comments.sse")
    assert run.parser.comments == 4
    assert run.chunks == [
        TextDeltaChunk(text="Yes"),
        TextDeltaChunk(text="."),
        CompletedChunk(stop_reason="stop"),
    ]


def test_utf8_split_mid_character() -> None:
    data = fixture("cc_multibyte.sse")
    emoji = data.index("😀".encode())
    whole = Run(CC, [data]).chunks
    for cut in range(emoji + 1, emoji + 4):
        assert Run(CC, [data[:cut], data[cut:]]).chunks == whole
    run = decode_fixture(CC, "cc_multibyte.sse")
    assert text(run.chunks) == "你好，世界 😀 café"  # noqa: RUF001


def test_invalid_utf8_is_replaced_not_fatal() -> None:
    data = fixture("cc_plain_text.sse").replace(b"Hello", b"He\xffllo")
    run = Run(CC, [data])
    assert text(run.chunks) == "He\ufffdllo, world!"


def test_non_json_frames_are_skipped_and_counted() -> None:
    run = decode_fixture(CC, "cc_non_json_frame.sse")
    assert text(run.chunks) == "ab"
    assert run.decoder.skipped == 3
    assert stop_reason(run.chunks) == "stop"


def test_u2028_and_nel_inside_json_strings() -> None:
    run = decode_fixture(CC, "cc_u2028.sse")
    assert text(run.chunks) == "line one\u2028line two\x85next \u2028 escaped"


def test_multiline_data_event_id_and_retry() -> None:
    run = decode_fixture(CC, "cc_multiline_data.sse")
    assert text(run.chunks) == "multi-line"
    assert run.parser.retry == 3000
    assert run.parser.last_event_id == "2"


def test_error_object_in_stream() -> None:
    run = decode_fixture(CC, "cc_error_frame.sse")
    assert text(run.chunks) == "Partial"
    failure = error(run.chunks)
    assert failure.code == "context_length_exceeded"
    assert "maximum context length" in failure.message


def test_nothing_after_the_end() -> None:
    decoder = ChatCompletionsDecoder()
    done = decoder.feed(SSEEvent(b"[DONE]"))
    assert done == [CompletedChunk(stop_reason="stop")]
    assert decoder.feed(SSEEvent(b'{"choices":[{"delta":{"content":"late"}}]}')) == []
    assert decoder.finish() == []


def test_finish_reason_without_done_is_a_clean_end() -> None:
    data = fixture("cc_plain_text.sse").replace(b"data: [DONE]\n\n", b"")
    run = Run(CC, [data])
    assert stop_reason(run.chunks) == "stop"
    assert usage(run.chunks) is not None
