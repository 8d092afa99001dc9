"""What kun records must read back: a model's tool arguments nested a
thousand deep must not make the line that records the call unreadable (or
crash the stream before it is recorded)."""

from __future__ import annotations

import msgspec
import pytest

from kun.contracts.events import ItemCompleted
from kun.contracts.items import ToolCall
from kun.model.arguments import repair_arguments
from kun.store.codec import decode_line, encode_line


def _at_depth(frames: int, line: bytes) -> object:
    """Decode ``line`` from ``frames`` calls down, as a reader deep in a
    server's stack would."""
    if frames:
        return _at_depth(frames - 1, line)
    return decode_line(line, "t")


@pytest.mark.parametrize("depth", [900, 5000])
def test_deeply_nested_tool_arguments_are_recorded_readably(depth: int) -> None:
    text = '{"a":' + "[" * depth + "]" * depth + "}"
    repaired = repair_arguments(text)
    call = ToolCall(id="i", call_id="c", name="n", arguments=msgspec.Raw(repaired.json))
    event = ItemCompleted(seq=1, at=1, thread_id="t", turn_id="u", item=call)
    line = encode_line(event)[:-1]
    assert _at_depth(200, line) == event
    assert repaired.method == "raw"
