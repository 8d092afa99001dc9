"""The real-world failures of issue 3, one named test each (the stream side).

Every fixture is decoded whole and split at every byte boundary.
"""

from __future__ import annotations

import msgspec

from kun.contracts.model import ToolCallCompleteChunk, ToolCallDeltaChunk, WireFormat
from kun.contracts.usage import UsageSnapshot

from .support import calls, decode_fixture, error, stop_reason, text, usage

CC: WireFormat = "chat_completions"


def test_rw01_all_calls_on_index_zero() -> None:
    """Ollama/LiteLLM: every parallel call on index 0, each with its own id."""
    run = decode_fixture(CC, "cc_rw01_all_calls_on_index_zero.sse")
    assert calls(run.chunks) == [
        ("call_w1x9", "write_file", {"path": "a.txt", "text": "1"}, "none"),
        ("call_k2p7", "write_file", {"path": "b.txt", "text": "2"}, "none"),
    ]
    assert stop_reason(run.chunks) == "tool_calls"


def test_rw01_index_zero_without_ids_new_name_after_arguments() -> None:
    """Gemini relays: no ids at all; a name after arguments opens a new call."""
    run = decode_fixture(CC, "cc_rw01_index_zero_without_ids.sse")
    found = calls(run.chunks)
    assert [(name, args) for _, name, args, _ in found] == [
        ("read_file", {"path": "a.py"}),
        ("read_file", {"path": "b.py"}),
    ]
    assert len({call_id for call_id, *_ in found}) == 2
    assert all(call_id.startswith("__kun_stream_tool_call_index_0") for call_id, *_ in found)


def test_rw02_missing_index() -> None:
    """Gemini compat: no index; calls keyed by id; finish_reason stop relabelled."""
    run = decode_fixture(CC, "cc_rw02_missing_index.sse")
    assert calls(run.chunks) == [
        ("call_p1", "get_weather", {"location": "Paris"}, "none"),
        ("call_r2", "get_weather", {"location": "Rome"}, "none"),
    ]
    assert stop_reason(run.chunks) == "tool_calls"


def test_rw02_missing_index_fragments_go_to_the_active_call() -> None:
    run = decode_fixture(CC, "cc_rw02_missing_index_fragments.sse")
    assert calls(run.chunks) == [("call_o1", "grep", {"pattern": "TODO"}, "none")]


def test_rw03_duplicate_index_entries_in_one_chunk_are_merged() -> None:
    """vLLM + Kimi: header and first fragment as two entries with index 0."""
    run = decode_fixture(CC, "cc_rw03_duplicate_index_in_chunk.sse")
    assert calls(run.chunks) == [("functions.list_files:0", "list_files", {"path": "."}, "none")]


def test_rw04_id_repeated_on_every_chunk_is_set_once() -> None:
    run = decode_fixture(CC, "cc_rw04_id_on_every_chunk.sse")
    assert calls(run.chunks) == [("toolu_01AbC", "get_weather", {"city": "Oslo"}, "none")]
    deltas = [c for c in run.chunks if isinstance(c, ToolCallDeltaChunk)]
    assert "".join(d.name for d in deltas) == "get_weather"


def test_rw05_different_id_after_the_first_chunk_is_adopted() -> None:
    """Poolside: the first chunk carries one id, later chunks another."""
    run = decode_fixture(CC, "cc_rw05_id_changes_after_first_chunk.sse")
    assert calls(run.chunks) == [("call_second_bbb", "run_tests", {"target": "unit"}, "none")]
    deltas = [c for c in run.chunks if isinstance(c, ToolCallDeltaChunk)]
    assert {d.index for d in deltas} == {0}


def test_rw05_id_missing_gets_a_stable_synthesized_id() -> None:
    run = decode_fixture(CC, "cc_rw05_id_missing.sse")
    assert calls(run.chunks) == [
        ("__kun_stream_tool_call_index_0", "calc", {"expr": "2*3"}, "none")
    ]


def test_rw06_continuation_without_id_or_index() -> None:
    """aichat: fragments with neither id nor index land on the call that
    received the previous fragment, even with interleaved indexed ones."""
    run = decode_fixture(CC, "cc_rw06_no_id_no_index.sse")
    assert calls(run.chunks) == [
        ("call_a", "read", {"p": 1}, "none"),
        ("call_b", "stat", {"f": 2}, "none"),
    ]


def test_rw07_finish_reason_stop_with_calls_becomes_tool_calls() -> None:
    run = decode_fixture(CC, "cc_rw07_stop_with_pending_calls.sse")
    assert text(run.chunks) == "Let me check."
    assert calls(run.chunks) == [("call_stop_1", "bash", {"command": "ls"}, "none")]
    assert stop_reason(run.chunks) == "tool_calls"


def test_rw08_tool_calls_without_calls_is_an_error() -> None:
    run = decode_fixture(CC, "cc_rw08_empty_tool_calls.sse")
    assert calls(run.chunks) == []
    assert error(run.chunks).code == "empty_tool_calls"
    assert usage(run.chunks) is not None


def test_rw09_connection_closed_without_finish_is_truncated() -> None:
    run = decode_fixture(CC, "cc_rw09_truncated_stream.sse")
    assert text(run.chunks) == "Working on it"
    assert not any(isinstance(c, ToolCallCompleteChunk) for c in run.chunks)
    assert error(run.chunks).code == "stream_truncated"


def test_rw10_usage_zero_until_last_then_null() -> None:
    run = decode_fixture(CC, "cc_rw10_usage_zero_until_last.sse")
    found = usage(run.chunks)
    assert found is not None
    assert found.usage == UsageSnapshot(
        prompt_tokens=1500, completion_tokens=2, cache_hit_tokens=1280, cache_miss_tokens=220
    )


def test_rw10_usage_deepseek_hit_and_miss() -> None:
    found = usage(decode_fixture(CC, "cc_rw10_usage_deepseek.sse").chunks)
    assert found is not None
    assert found.usage == UsageSnapshot(
        prompt_tokens=2048, completion_tokens=1, cache_hit_tokens=1920, cache_miss_tokens=128
    )


def test_rw10_usage_in_choice_with_moonshot_cached_tokens() -> None:
    found = usage(decode_fixture(CC, "cc_rw10_usage_in_choice_moonshot.sse").chunks)
    assert found is not None
    assert found.usage == UsageSnapshot(
        prompt_tokens=300, completion_tokens=1, cache_hit_tokens=256, cache_miss_tokens=44
    )
    assert found.model == "kimi-k2-0905-preview"


def test_rw14_anthropic_overloaded_error_event() -> None:
    run = decode_fixture("messages", "msg_rw14_overloaded_error.sse")
    failure = error(run.chunks)
    assert (failure.code, failure.message) == ("overloaded_error", "Overloaded")
    assert run.decoder.keepalives == 1


def test_rw15_malformed_arguments() -> None:
    run = decode_fixture(CC, "cc_rw15_malformed_arguments.sse")
    assert calls(run.chunks) == [
        ("call_trailing", "open", {"path": "a.md"}, "object"),
        ("call_control", "write", {"text": "a\tb\nc"}, "lenient"),
        ("call_valid", "note", {"body": '```json\n{"x": 1}\n```'}, "none"),
        ("call_truncated", "write", {"__raw": '{"text": "unfinis'}, "raw"),
        ("call_braces", "grep", {"pattern": "}{", "path": "src\\{x}"}, "object"),
    ]


def test_rw16_empty_arguments_complete_as_empty_object() -> None:
    run = decode_fixture(CC, "cc_rw16_empty_arguments.sse")
    complete = [c for c in run.chunks if isinstance(c, ToolCallCompleteChunk)]
    assert len(complete) == 1
    assert complete[0].arguments == msgspec.Raw(b"{}")
    assert complete[0].repair == "empty"
    assert stop_reason(run.chunks) == "tool_calls"


def test_rw17_tool_name_split_across_deltas() -> None:
    run = decode_fixture(CC, "cc_rw17_split_name.sse")
    assert calls(run.chunks) == [
        ("call_s1", "browser_open", {"url": "https://example.com"}, "none")
    ]


def test_rw18_keepalives_produce_no_chunks() -> None:
    """Comments and pings are counted, so an idle timer can ignore them."""
    cc = decode_fixture(CC, "cc_keepalive_comments.sse")
    assert cc.parser.comments == 4
    msg = decode_fixture("messages", "msg_text.sse")
    assert msg.decoder.keepalives == 1
    assert text(msg.chunks) == "Hello!"


def test_rw21_index_is_an_opaque_key() -> None:
    run = decode_fixture(CC, "cc_rw21_index_not_from_zero.sse")
    assert calls(run.chunks) == [
        ("call_x3", "fetch", {"u": "a"}, "none"),
        ("call_x7", "fetch", {"u": "b"}, "none"),
    ]
    deltas = [c for c in run.chunks if isinstance(c, ToolCallDeltaChunk)]
    assert [d.index for d in deltas] == [0, 1, 1, 0]
