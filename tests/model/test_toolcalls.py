"""The shared tool-call table, driven directly."""

from __future__ import annotations

import pytest

from kun.contracts.model import ToolCallDeltaChunk
from kun.model.errors import StreamProtocolError
from kun.model.toolcalls import ToolCallTable

from .support import calls


@pytest.mark.parametrize(
    ("call_id", "match"),
    [
        (42, "not a string"),
        (["a"], "not a string"),
        ("call\x00x", "control"),
        ("call\nx", "control"),
        ("call\x9bx", "control"),
        ("c" * 257, "257 characters"),
    ],
)
def test_malformed_ids_are_protocol_errors(call_id: object, match: str) -> None:
    with pytest.raises(StreamProtocolError, match=match):
        ToolCallTable().delta(call_id=call_id, index=0, name="f")


def test_null_and_empty_ids_mean_not_given() -> None:
    table = ToolCallTable()
    table.delta(call_id=None, index=0, name="f")
    table.delta(call_id="", index=0, arguments="{}")
    assert calls(table.settle_all()) == [("__kun_stream_tool_call_index_0", "f", {}, "none")]


def test_an_id_of_256_characters_is_fine() -> None:
    table = ToolCallTable()
    table.delta(call_id="c" * 256, index=0, name="f")
    assert len(table.settle_all()) == 1


def test_empty_deltas_produce_nothing() -> None:
    table = ToolCallTable()
    assert table.delta(index=0) is None
    assert table.delta(index=0, name="", arguments="") is None
    assert table.settle_all() == []


def test_unnamed_calls_are_dropped_and_counted() -> None:
    table = ToolCallTable()
    table.delta(index=0, arguments='{"a":1}')
    assert table.settle_all() == []
    assert table.dropped == 1


def test_late_id_migrates_keeping_arguments_and_ordinal() -> None:
    table = ToolCallTable()
    first = table.delta(index=5, name="f", arguments='{"a":')
    late = table.delta(call_id="call_real", index=5, arguments="1}")
    assert first == ToolCallDeltaChunk(
        call_id="__kun_stream_tool_call_index_5", name="f", arguments='{"a":', index=0
    )
    assert late == ToolCallDeltaChunk(call_id="call_real", arguments="1}", index=0)
    assert calls(table.settle_all()) == [("call_real", "f", {"a": 1}, "none")]


def test_late_id_with_no_index_migrates_the_single_pending_call() -> None:
    table = ToolCallTable()
    table.delta(name="f", arguments="{}")
    table.delta(call_id="call_z")
    assert calls(table.settle_all()) == [("call_z", "f", {}, "none")]


def test_delta_after_completion_is_a_protocol_error() -> None:
    table = ToolCallTable()
    table.delta(call_id="a", index=0, name="f")
    assert table.complete(index=0) is not None
    with pytest.raises(StreamProtocolError, match="after it completed"):
        table.delta(call_id="a", arguments="{}")


def test_complete_unknown_call_with_name_creates_it() -> None:
    table = ToolCallTable()
    done = table.complete(call_id="x", index=3, name="f", arguments='{"k":2}')
    assert done is not None
    assert calls([done]) == [("x", "f", {"k": 2}, "none")]
    assert table.complete(index=9) is None


def test_complete_arguments_replace_streamed_text() -> None:
    table = ToolCallTable()
    table.delta(call_id="x", index=0, name="f", arguments='{"partial')
    done = table.complete(index=0, arguments='{"whole": true}')
    assert done is not None
    assert calls([done]) == [("x", "f", {"whole": True}, "none")]


def test_non_string_name_is_a_protocol_error() -> None:
    with pytest.raises(StreamProtocolError, match="name"):
        ToolCallTable().delta(call_id="a", name=7)


def test_unhashable_index_is_a_protocol_error() -> None:
    with pytest.raises(StreamProtocolError, match="index"):
        ToolCallTable().delta(call_id="a", index={"i": 0}, name="f")


def test_arguments_sent_as_an_object() -> None:
    table = ToolCallTable()
    table.delta(call_id="a", index=0, name="f", arguments={"x": [1]})
    assert calls(table.settle_all()) == [("a", "f", {"x": [1]}, "none")]


def test_same_name_repeated_before_arguments_is_not_doubled() -> None:
    table = ToolCallTable()
    table.delta(call_id="a", index=0, name="read")
    table.delta(call_id="a", index=0, name="read", arguments="{}")
    assert calls(table.settle_all()) == [("a", "read", {}, "none")]


def test_has_named_pending() -> None:
    table = ToolCallTable()
    assert not table.has_named_pending
    table.delta(index=0, arguments="{")
    assert not table.has_named_pending
    table.delta(index=1, name="f")
    assert table.has_named_pending


def test_new_id_and_same_name_before_arguments_is_the_same_call() -> None:
    table = ToolCallTable()
    table.delta(call_id="first", index=0, name="run")
    table.delta(call_id="second", index=0, name="run")
    table.delta(call_id="second", index=0, arguments="{}")
    assert calls(table.settle_all()) == [("second", "run", {}, "none")]


def test_new_id_and_other_name_at_an_occupied_index_is_a_new_call() -> None:
    table = ToolCallTable()
    table.delta(call_id="a", index=0, name="ping")
    table.delta(call_id="b", index=0, name="pong", arguments="{}")
    assert [(c, n) for c, n, _, _ in calls(table.settle_all())] == [("a", "ping"), ("b", "pong")]


def test_arguments_at_an_unknown_index_go_to_the_single_pending_call() -> None:
    table = ToolCallTable()
    table.delta(call_id="a", index=0, name="f")
    table.delta(index=9, arguments='{"x":1}')
    assert calls(table.settle_all()) == [("a", "f", {"x": 1}, "none")]
