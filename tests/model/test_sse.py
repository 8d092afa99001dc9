"""The SSE parser against the WHATWG rules, and against a line-by-line
reference implementation on arbitrary streams split in arbitrary pieces."""

from __future__ import annotations

import itertools
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from kun.model.sse import SSEEvent, SSEParser

from .support import splits

Seen = tuple[str, str, str]


def ev(data: str, event: str = "message", id: str = "") -> Seen:
    return (data, event, id)


def seen(events: list[SSEEvent]) -> list[Seen]:
    return [(e.data, e.event, e.id) for e in events]


def parse(*pieces: bytes) -> tuple[list[Seen], SSEParser]:
    parser = SSEParser()
    events = [event for piece in pieces for event in parser.feed(piece)]
    return seen(events + parser.flush()), parser


def test_line_endings_lf_crlf_cr_mixed() -> None:
    events, _ = parse(b"data: a\n\ndata: b\r\n\r\ndata: c\r\rdata: d\r\n\n")
    assert [data for data, _, _ in events] == ["a", "b", "c", "d"]


def test_cr_at_end_of_read_then_lf_is_one_line_end() -> None:
    events, _ = parse(b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n")
    assert events == [ev("a\nb")]


def test_cr_then_lone_lf_next_read_after_empty_read() -> None:
    events, _ = parse(b"data: a\r", b"", b"\n\r\n")
    assert events == [ev("a")]


def test_multiline_data_and_single_space_stripped() -> None:
    events, _ = parse(b"data: one\ndata:two\ndata:  three\ndata\n\n")
    assert events == [ev("one\ntwo\n three\n")]


def test_event_id_retry_and_unknown_fields() -> None:
    events, parser = parse(
        b"event: update\nid: 7\nretry: 1500\nfoo: bar\ndata: x\n\n"
        b"data: y\n\nid: bad\x00id\nretry: soon\ndata: z\n\n"
    )
    assert events == [
        ev("x", "update", "7"),
        ev("y", "message", "7"),
        ev("z", "message", "7"),
    ]
    assert parser.retry == 1500


def test_comments_are_counted_and_dispatch_nothing() -> None:
    events, parser = parse(b": keep-alive\n\n:\n\n: a\ndata: x\n: b\n\n")
    assert events == [ev("x")]
    assert parser.comments == 4


def test_event_without_data_is_not_dispatched() -> None:
    events, _ = parse(b"event: ping\n\nid: 3\n\ndata: x\n\n")
    assert events == [ev("x", "message", "3")]


def test_bom_dropped_once_even_split() -> None:
    data = b"\xef\xbb\xbfdata: a\n\n\xef\xbb\xbfdata: b\n\n"
    for pieces in splits(data):
        events, _ = parse(*pieces)
        assert [data for data, _, _ in events] == ["a"]


def test_utf8_split_across_reads_and_invalid_bytes() -> None:
    data = "data: 你好😀\n\n".encode()
    for pieces in splits(data):
        assert parse(*pieces)[0] == [ev("你好😀")]
    assert parse(b"data: a\xffb\n\n")[0] == [ev("a\ufffdb")]


def test_unicode_line_separators_do_not_split_lines() -> None:
    payload = "a\u2028b\x85c\u2029d\x0ce\x1cf"
    events, _ = parse(f"data: {payload}\n\n".encode())
    assert events == [ev(payload)]


def test_flush_dispatches_an_event_missing_its_blank_line() -> None:
    assert parse(b"data: [DONE]\n")[0] == [ev("[DONE]")]
    assert SSEParser().flush() == []
    parser = SSEParser()
    assert parser.feed(b"data: [DONE]") == []
    assert parser.flush()[0].is_done
    assert parse(b"data: x\n\n: trailing comment\n")[0] == [ev("x")]


def test_extra_blank_lines_between_events() -> None:
    events, _ = parse(b"\n\n\ndata: a\n\n\n\n\ndata: b\n\n\n")
    assert [data for data, _, _ in events] == ["a", "b"]


# -- reference implementation -------------------------------------------------


def reference(stream: bytes) -> tuple[list[Seen], int, int | None, str]:
    """The WHATWG algorithm, transcribed line by line over decoded text;
    at the end the pending event is dispatched (kun's documented choice)."""
    text = stream.decode("utf-8", "replace")
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = re.split("\r\n|\r|\n", text)
    tail = lines.pop()
    events: list[Seen] = []
    data: list[str] = []
    event = ""
    last_id = ""
    retry: int | None = None
    comments = 0
    if tail:
        lines.append(tail)
    lines.append("")
    for line in lines:
        if not line:
            if data:
                events.append(ev("\n".join(data), event or "message", last_id))
            data, event = [], ""
        elif line.startswith(":"):
            comments += 1
        else:
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "data":
                data.append(value)
            elif name == "event":
                event = value
            elif name == "id" and "\0" not in value:
                last_id = value
            elif name == "retry" and value.isascii() and value.isdigit():
                retry = int(value)
    return events, comments, retry, last_id


_values = st.text(
    alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters="\r\n"),
    max_size=12,
) | st.sampled_from(["", " ", "[DONE]", '{"a":1}', "12", "x\u2028y", "\x00"])
_names = st.sampled_from(["data", "data", "data", "event", "id", "retry", "", "other", "dat"])
_line = st.one_of(
    st.builds(lambda n, v: f"{n}: {v}", _names, _values),
    st.builds(lambda n, v: f"{n}:{v}", _names, _values),
    st.builds(lambda v: f":{v}", _values),
    _names,
    st.just(""),
)
_ending = st.sampled_from(["\n", "\r\n", "\r"])


@st.composite
def streams(draw: st.DrawFn) -> bytes:
    parts = draw(st.lists(st.tuples(_line, _ending), max_size=30))
    text = "".join(line + end for line, end in parts)
    if draw(st.booleans()):
        text += draw(_line)
    prefix = b"\xef\xbb\xbf" if draw(st.booleans()) else b""
    return prefix + text.encode()


@st.composite
def pieces_of(draw: st.DrawFn, data: bytes) -> list[bytes]:
    cuts = sorted(draw(st.sets(st.integers(0, len(data)), max_size=12)))
    bounds = [0, *cuts, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds)]


@settings(max_examples=300, deadline=None)
@given(data=st.data(), stream=streams())
def test_matches_reference_in_any_pieces(data: st.DataObject, stream: bytes) -> None:
    pieces = data.draw(pieces_of(stream))
    events, parser = parse(*pieces)
    expected, comments, retry, last_id = reference(stream)
    assert events == expected
    assert parser.comments == comments
    assert parser.retry == retry
    assert parser.last_event_id == last_id
