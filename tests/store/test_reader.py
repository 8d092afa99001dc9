"""The streaming reader: every kind of damage, each with its documented outcome.

A bad line in the middle raises ``CorruptLog`` naming file, line and last good
seq (strict and tolerant) or is skipped and counted (``skip_bad``). A torn last
line never raises: it is reported. Unknown kinds raise in strict mode and are
counted and skipped otherwise.
"""

from __future__ import annotations

import gc
import random
import tracemalloc
import warnings as warnings_module
from pathlib import Path

import msgspec
import pytest

from kun.contracts.events import Event, ItemCompleted
from kun.contracts.items import ToolCall
from kun.store import CorruptLog, ReadMode, ReadReport, UnknownEventKind, read_log
from kun.store import reader as reader_module
from kun.store.codec import encode_line
from tests.store.factories import TID, every_kind, warning, warnings

UNKNOWN = b'{"kind":"hologram","seq":3,"at":1,"thread_id":"thr_test","colour":"blue"}'
WRONG_SHAPE = b'{"kind":"warning","seq":3,"at":1,"thread_id":"thr_test"}'


def write(path: Path, *parts: bytes | Event) -> Path:
    path.write_bytes(b"".join(p if isinstance(p, bytes) else encode_line(p) for p in parts))
    return path


def seqs(path: Path, mode: ReadMode = "strict", report: ReadReport | None = None) -> list[int]:
    return [e.seq for e in read_log(path, mode=mode, report=report)]


@pytest.fixture
def log(tmp_path: Path) -> Path:
    """In a directory named after the thread: lines leave the thread id out
    and the reader takes it from there."""
    (tmp_path / TID).mkdir()
    return tmp_path / TID / "events.jsonl"


def test_reads_back_every_kind_in_order(log: Path) -> None:
    events = every_kind()
    write(log, *events)
    report = ReadReport()
    assert list(read_log(log, report=report)) == events
    assert (report.lines, report.events, report.last_seq) == (len(events), len(events), len(events))
    assert report.torn_tail is None


def test_an_empty_log_has_no_events(log: Path) -> None:
    write(log)
    assert seqs(log) == []


def test_after_and_until_select_a_window(log: Path) -> None:
    write(log, *warnings(1, 10))
    assert seqs_window(log, after=3, until=6) == [4, 5, 6]
    assert seqs_window(log, after=10) == []
    assert seqs_window(log, until=0) == []
    assert seqs_window(log, after=0, until=None) == list(range(1, 11))


def seqs_window(path: Path, after: int = 0, until: int | None = None) -> list[int]:
    return [e.seq for e in read_log(path, after=after, until=until)]


@pytest.mark.parametrize("chunk", [1, 5, 64, 333])
@pytest.mark.parametrize("sub_block", [1, 100, 1 << 14])
def test_chunk_and_block_boundaries_change_nothing(
    log: Path, monkeypatch: pytest.MonkeyPatch, chunk: int, sub_block: int
) -> None:
    events = every_kind()
    events[12:] = [msgspec.structs.replace(e, seq=e.seq + 1) for e in events[12:]]
    unknown = UNKNOWN.replace(b'"seq":3', b'"seq":13')
    write(log, *events[:12], unknown + b"\n", *events[12:], b'{"torn')
    monkeypatch.setattr(reader_module, "CHUNK_SIZE", chunk)
    monkeypatch.setattr(reader_module, "SUB_BLOCK_SIZE", sub_block)
    report = ReadReport()
    assert list(read_log(log, mode="tolerant", report=report)) == events
    assert report.unknown_kinds == {"hologram": 1}
    assert report.torn_tail is not None
    assert (report.torn_tail.line, report.torn_tail.size) == (len(events) + 2, 6)


@pytest.mark.parametrize("mode", ["strict", "tolerant", "skip_bad"])
def test_a_last_line_without_newline_is_a_torn_tail_not_an_error(log: Path, mode: ReadMode) -> None:
    write(log, *warnings(1, 2), encode_line(warning(3))[:-7])
    report = ReadReport()
    assert seqs(log, mode, report) == [1, 2]
    torn = report.torn_tail
    assert torn is not None
    assert (torn.line, torn.offset) == (3, len(encode_line(warning(1))) * 2)
    assert torn.size == len(encode_line(warning(3))) - 7
    assert "no trailing newline" in torn.reason
    assert torn.preview.startswith('{"kind":"warning"')


def test_a_complete_last_line_without_newline_is_still_torn(log: Path) -> None:
    write(log, warning(1), encode_line(warning(2))[:-1])
    report = ReadReport()
    assert seqs(log, report=report) == [1]
    assert report.torn_tail is not None


@pytest.mark.parametrize("mode", ["strict", "tolerant", "skip_bad"])
def test_a_last_line_that_is_not_json_is_a_torn_tail(log: Path, mode: ReadMode) -> None:
    write(log, *warnings(1, 2), b"\x00\x00\x00\n")
    report = ReadReport()
    assert seqs(log, mode, report) == [1, 2]
    assert report.torn_tail is not None
    assert report.torn_tail.line == 3
    assert report.torn_tail.size == 4
    assert "not valid JSON" in report.torn_tail.reason


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        (b"garbage", "malformed"),
        (encode_line(warning(3))[:-1].replace(b'"m"', b'"\xff\xfe"'), "UTF-8"),
        (WRONG_SHAPE, "missing required field `code`"),
        (b"[1,2,3]", "not an event"),
        (b'{"kind":"warning","seq":3', "truncated"),
    ],
    ids=["garbage", "invalid-utf8", "wrong-shape", "not-an-object", "half-a-line"],
)
@pytest.mark.parametrize("mode", ["strict", "tolerant"])
def test_a_bad_line_in_the_middle_names_file_line_and_last_good_seq(
    log: Path, bad: bytes, reason: str, mode: ReadMode
) -> None:
    write(log, *warnings(1, 2), bad + b"\n", *warnings(3, 4))
    events = read_log(log, mode=mode)
    assert [next(events).seq, next(events).seq] == [1, 2]
    with pytest.raises(CorruptLog) as caught:
        next(events)
    error = caught.value
    assert (error.path, error.line, error.last_good_seq) == (log, 3, 2)
    assert reason in error.reason
    assert str(log) in str(error)
    assert "line 3" in str(error)
    assert "last good seq 2" in str(error)
    assert not isinstance(error, UnknownEventKind)


def test_skip_bad_skips_and_counts_bad_lines(log: Path) -> None:
    write(log, warning(1), b"garbage\n", WRONG_SHAPE + b"\n", UNKNOWN + b"\n", warning(4))
    report = ReadReport()
    assert seqs(log, "skip_bad", report) == [1, 4]
    assert (report.skipped_bad, report.unknown_kinds, report.lines) == (2, {"hologram": 1}, 5)


def test_a_wrong_shape_last_line_is_corrupt_not_torn(log: Path) -> None:
    write(log, *warnings(1, 2), WRONG_SHAPE + b"\n")
    with pytest.raises(CorruptLog) as caught:
        seqs(log)
    assert (caught.value.line, caught.value.last_good_seq) == (3, 2)


def test_a_bad_line_followed_only_by_a_torn_tail_is_corrupt(log: Path) -> None:
    write(log, warning(1), b"garbage\n", b'{"kind":')
    with pytest.raises(CorruptLog) as caught:
        seqs(log)
    assert caught.value.line == 2


@pytest.mark.slow
def test_a_ten_megabyte_garbage_line_in_the_middle(log: Path) -> None:
    garbage = random.Random(7).randbytes(10 * 1024 * 1024).replace(b"\n", b"x")
    write(log, *warnings(1, 2), garbage + b"\n", *warnings(3, 4))
    with pytest.raises(CorruptLog) as caught:
        seqs(log)
    assert (caught.value.line, caught.value.last_good_seq) == (3, 2)
    assert len(str(caught.value)) < 500
    report = ReadReport()
    assert seqs(log, "skip_bad", report) == [1, 2, 3, 4]
    assert report.skipped_bad == 1


def test_unknown_kinds_raise_in_strict_mode(log: Path) -> None:
    write(log, *warnings(1, 2), UNKNOWN + b"\n", *warnings(4, 5))
    with pytest.raises(UnknownEventKind) as caught:
        seqs(log)
    assert (caught.value.kind, caught.value.line, caught.value.last_good_seq) == ("hologram", 3, 2)
    assert isinstance(caught.value, CorruptLog)
    assert "hologram" in str(caught.value)


def test_unknown_kinds_are_counted_and_skipped_in_tolerant_mode(log: Path) -> None:
    other = UNKNOWN.replace(b"hologram", b"telepathy").replace(b'"seq":3', b'"seq":5')
    last = UNKNOWN.replace(b'"seq":3', b'"seq":6')
    write(log, *warnings(1, 2), UNKNOWN + b"\n", warning(4), other + b"\n", last + b"\n")
    report = ReadReport()
    assert seqs(log, "tolerant", report) == [1, 2, 4]
    assert report.unknown_kinds == {"hologram": 2, "telepathy": 1}
    assert report.unknown == 3
    assert report.torn_tail is None


def test_blank_lines_are_whitespace(log: Path) -> None:
    write(log, warning(1), b"\n  \n", warning(2), b"\n")
    report = ReadReport()
    assert seqs(log, report=report) == [1, 2]
    assert report.torn_tail is None


def test_lines_are_split_on_newline_only(log: Path) -> None:
    text = "a\u2028b\u2029c\x85d\x0be\x0cf\x1cg\rh"
    write(log, warning(1, message=text), warning(2, message=text))
    assert [e.message for e in read_log(log)] == [text, text]  # type: ignore[union-attr]


def test_a_long_valid_line_spanning_many_chunks(log: Path) -> None:
    big = warning(2, message="x" * (3 * reader_module.CHUNK_SIZE + 17))
    write(log, warning(1), big, warning(3))
    assert list(read_log(log)) == [warning(1), big, warning(3)]


def test_kept_tool_calls_do_not_keep_the_log_in_memory(log: Path) -> None:
    filler = "x" * 2000
    events: list[Event] = []
    for seq in range(1, 4001, 2):
        call = ToolCall(id=f"i{seq}", call_id="c", name="read", arguments=msgspec.Raw(b"{}"))
        events.append(ItemCompleted(seq=seq, at=seq, thread_id=TID, item=call))
        events.append(warning(seq + 1, message=filler))
    write(log, *events)
    tracemalloc.start()
    try:
        kept = [e for e in read_log(log) if isinstance(e, ItemCompleted)]
        retained, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(kept) == 2000
    assert kept[0].item == ToolCall(id="i1", call_id="c", name="read", arguments=msgspec.Raw(b"{}"))
    assert retained < log.stat().st_size / 4


def test_an_abandoned_iterator_closes_the_file(log: Path) -> None:
    write(log, *warnings(1, 3))
    events = read_log(log)
    assert next(events).seq == 1
    with warnings_module.catch_warnings():
        warnings_module.simplefilter("error", ResourceWarning)
        del events
        gc.collect()
    never_started = read_log(log)
    del never_started
    gc.collect()


@pytest.mark.parametrize(("chunk", "sub_block"), [(1 << 20, 1 << 16), (700, 300), (97, 41)])
def test_pages_match_a_filter_of_the_whole_log(
    log: Path, monkeypatch: pytest.MonkeyPatch, chunk: int, sub_block: int
) -> None:
    monkeypatch.setattr(reader_module, "CHUNK_SIZE", chunk)
    monkeypatch.setattr(reader_module, "SUB_BLOCK_SIZE", sub_block)
    write(log, *warnings(1, 60))
    for after in (0, 1, 17, 59, 60, 70):
        for limit in (None, 1, 5, 100):
            got = [e.seq for e in read_log(log, after=after, limit=limit)]
            expected = list(range(after + 1, 61))[:limit]
            assert got == expected, (after, limit)


def test_lines_before_after_are_skipped_undecoded(
    log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(reader_module, "CHUNK_SIZE", 500)
    monkeypatch.setattr(reader_module, "SUB_BLOCK_SIZE", 200)
    write(log, *warnings(1, 5), b"not json\n", *warnings(7, 200))
    with pytest.raises(CorruptLog, match="line 6"):
        seqs(log)
    report = ReadReport()
    assert [e.seq for e in read_log(log, after=190, report=report)] == list(range(191, 201))
    assert report.lines < 30
    assert (report.events, report.last_seq) == (10, 200)


def test_a_page_stops_before_damage_past_its_end(log: Path) -> None:
    write(log, *warnings(1, 5), b"not json\n", *warnings(7, 8))
    assert [e.seq for e in read_log(log, after=1, limit=3)] == [2, 3, 4]
    with pytest.raises(CorruptLog):
        list(read_log(log, after=1, limit=6))


def test_a_gap_at_the_start_of_a_page_is_still_found(
    log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(reader_module, "SUB_BLOCK_SIZE", 200)
    write(log, *warnings(1, 40), *warnings(42, 60))
    with pytest.raises(CorruptLog, match="seq jumps from 40 to 42"):
        list(read_log(log, after=35))


def test_a_negative_limit_is_refused(log: Path) -> None:
    write(log, *warnings(1, 3))
    with pytest.raises(ValueError, match="limit"):
        read_log(log, limit=-1)
    assert seqs_window(log) == [1, 2, 3]
    assert list(read_log(log, limit=0)) == []
