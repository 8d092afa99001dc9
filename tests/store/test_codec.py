"""The codec: exact round trips, and how a line that is not an event is told apart."""

from __future__ import annotations

import msgspec
import msgspec.inspect
import pytest

from kun.contracts import events as ev
from kun.contracts.events import KINDS, Event
from kun.contracts.items import ToolCall
from kun.store.codec import (
    NotJson,
    UnknownKind,
    WrongShape,
    decode_block,
    decode_line,
    encode_into,
    encode_line,
    stale_types,
)
from tests.store.factories import TID, every_kind, warning


def test_the_sample_covers_every_kind() -> None:
    assert {type(e).__struct_config__.tag for e in every_kind()} == KINDS


@pytest.mark.parametrize("event", every_kind(), ids=lambda e: type(e).__name__)
def test_every_kind_round_trips_exactly_through_one_line(event: msgspec.Struct) -> None:
    line = encode_line(event)  # type: ignore[arg-type]
    assert line.endswith(b"\n")
    assert line.count(b"\n") == 1
    decoded = decode_line(line[:-1], event.thread_id)  # type: ignore[attr-defined]
    assert decoded == event
    assert encode_line(decoded) == line


def test_a_block_of_every_kind_decodes_in_one_call() -> None:
    events = every_kind()
    block = b"".join(encode_line(e) for e in events)
    assert decode_block(block, 0, len(block), stale_types(), TID) == events


def test_a_block_with_a_bad_line_asks_for_the_slow_path() -> None:
    block = encode_line(warning(1)) + b"nope\n"
    assert decode_block(block, 0, len(block), stale_types()) is None


def test_nothing_is_stale_while_every_kind_is_at_version_one() -> None:
    assert stale_types() == {}


@pytest.mark.parametrize(
    ("line", "error"),
    [
        (b'{"kind":"warn', NotJson),
        (b"\xff\xfe", NotJson),
        (encode_line(warning(1))[:-1].replace(b'"m"', b'"\xff"'), NotJson),
        (b"[1, 2]", WrongShape),
        (b'{"seq": 1}', WrongShape),
        (b'{"kind":"warning","seq":1}', WrongShape),
        (b'{"kind":"from_the_future","seq":4}', UnknownKind),
    ],
)
def test_lines_that_are_not_events_are_classified(line: bytes, error: type[Exception]) -> None:
    with pytest.raises(error):
        decode_line(line)


def test_an_unknown_kind_reports_its_kind_and_seq() -> None:
    with pytest.raises(UnknownKind) as caught:
        decode_line(b'{"kind":"hologram","seq":12,"at":1,"thread_id":"t","colour":"blue"}')
    assert (caught.value.kind, caught.value.seq) == ("hologram", 12)


def raw_fields(info: msgspec.inspect.Type, seen: set[type]) -> list[str]:
    """Every ``msgspec.Raw`` field reachable from ``info``, as ``Struct.field``."""
    inspect = msgspec.inspect
    if isinstance(info, inspect.UnionType):
        return [name for member in info.types for name in raw_fields(member, seen)]
    if isinstance(info, inspect.StructType) and info.cls not in seen:
        seen.add(info.cls)
        found = []
        for field in info.fields:
            if isinstance(field.type, inspect.RawType):
                found.append(f"{info.cls.__name__}.{field.name}")
            else:
                found.extend(raw_fields(field.type, seen))
        return found
    if isinstance(info, inspect.VarTupleType | inspect.ListType):
        return raw_fields(info.item_type, seen)
    if isinstance(info, inspect.TupleType):
        return [name for item in info.item_types for name in raw_fields(item, seen)]
    if isinstance(info, inspect.DictType):
        return raw_fields(info.value_type, seen)
    return []


def test_tool_call_arguments_are_the_only_raw_field() -> None:
    """``decode_block`` copies ``ToolCall.arguments`` out of the block it
    decoded; a new ``Raw`` field must be copied there too, or replay would
    keep whole chunks of the log alive."""
    assert raw_fields(msgspec.inspect.type_info(Event), set()) == ["ToolCall.arguments"]


def test_decoded_tool_call_arguments_do_not_share_the_block() -> None:
    event = every_kind()[9]
    following = msgspec.structs.replace(event, seq=event.seq + 1)
    lines = encode_line(event) + encode_line(following)
    block = b"x\n" + lines + b"y\n"
    decoded = decode_block(block, 2, 2 + len(lines), stale_types(), TID)
    assert decoded == [event, following]


def test_a_line_leaves_out_the_thread_id_and_what_is_at_its_default() -> None:
    line = encode_line(warning(3))
    assert line == b'{"kind":"warning","seq":3,"at":1700000000003,"code":"test","message":"m"}\n'
    assert decode_line(line[:-1], TID) == warning(3)


def test_a_full_envelope_line_decodes_to_the_same_event() -> None:
    """Lines written before the compact envelope name every field."""
    full = (
        b'{"kind":"warning","seq":3,"at":1700000000003,"thread_id":"thr_test",'
        b'"turn_id":null,"v":1,"code":"test","message":"m"}'
    )
    assert decode_line(full, "another") == warning(3)
    assert decode_block(full + b"\n", 0, len(full) + 1, stale_types(), "another") == [warning(3)]


def test_only_the_envelope_thread_id_is_left_out() -> None:
    """A tool call's raw arguments may hold a ``thread_id`` key of their own."""
    args = b'{"thread_id":"thr_test","x":{"thread_id":"thr_test"}}'
    call = ToolCall(id="i", call_id="c", name="n", arguments=msgspec.Raw(args))
    event = ev.ItemCompleted(seq=1, at=1, thread_id=TID, turn_id="u", item=call)
    line = encode_line(event)
    assert line.count(b'"thread_id"') == 2
    assert args in line
    buffer = bytearray(b"prefix\n")
    encode_into(event, buffer, len(buffer))
    assert bytes(buffer) == b"prefix\n" + line[:-1]
    decoded = decode_line(line[:-1], TID)
    assert decoded == event
    assert bytes(decoded.item.arguments) == args  # type: ignore[attr-defined]
