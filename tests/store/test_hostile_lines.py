"""Hostile logs: lines that look almost right, and what each reader mode does.

One line is one event, seqs go 1, 2, 3, ... without a hole, a line nested
deeper than the decoder can follow is a corrupt line (never a
``RecursionError``), and a known kind at a version newer than this kun knows
is an unknown kind. Strict reads refuse each of these with a ``CorruptLog``
naming the line; tolerant reads count what they may skip (gaps, newer kinds);
``skip_bad`` reads skip and count everything they cannot use.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kun.contracts.events import Event
from kun.store import CorruptLog, ReadMode, ReadReport, UnknownEventKind, read_log
from kun.store import reader as reader_module
from kun.store.codec import decode_block, encode_line, stale_types
from tests.store.factories import TID, warning, warnings

DEEP = b'{"kind":"warning","seq":3,"at":1,"thread_id":"thr_test","code":"c","message":"m","x":'
DEEP += b"[" * 1000 + b"]" * 1000 + b"}"


def write(path: Path, *parts: bytes | Event) -> Path:
    path.write_bytes(b"".join(p if isinstance(p, bytes) else encode_line(p) for p in parts))
    return path


def seqs(path: Path, mode: ReadMode = "strict", report: ReadReport | None = None) -> list[int]:
    return [e.seq for e in read_log(path, mode=mode, report=report)]


def line(event: Event) -> bytes:
    return encode_line(event)[:-1]


@pytest.fixture
def log(tmp_path: Path) -> Path:
    """In a directory named after the thread: lines leave the thread id out
    and the reader takes it from there."""
    (tmp_path / TID).mkdir()
    return tmp_path / TID / "events.jsonl"


@pytest.fixture(params=[1 << 16, 1], ids=["fast", "line-by-line"])
def sub_block(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> int:
    """Every case is read with the usual sub-blocks and with one line per
    sub-block: the verdict must not depend on where a block ends."""
    monkeypatch.setattr(reader_module, "SUB_BLOCK_SIZE", request.param)
    return int(request.param)


# -- item 2: one line is one event ---------------------------------------------


@pytest.mark.parametrize("mode", ["strict", "tolerant"])
@pytest.mark.parametrize("glue", [b"", b" ", b"\t", b","], ids=["none", "space", "tab", "comma"])
def test_two_events_on_one_line_are_refused(
    log: Path, mode: ReadMode, glue: bytes, sub_block: int
) -> None:
    write(log, warning(1), line(warning(2)) + glue + line(warning(3)) + b"\n", warning(4))
    with pytest.raises(CorruptLog) as caught:
        seqs(log, mode)
    assert (caught.value.line, caught.value.last_good_seq) == (2, 1)
    assert "one event" in caught.value.reason


def test_one_event_split_over_two_lines_is_refused(log: Path, sub_block: int) -> None:
    whole = line(warning(2))
    cut = whole.index(b'"at"')
    write(log, warning(1), whole[:cut] + b"\n" + whole[cut:] + b"\n", warning(3))
    with pytest.raises(CorruptLog) as caught:
        seqs(log)
    assert (caught.value.line, caught.value.last_good_seq) == (2, 1)


def test_a_split_event_that_a_double_line_makes_up_for_is_refused(
    log: Path, sub_block: int
) -> None:
    """As many values as lines, but not one per line: counting alone is not enough."""
    second = line(warning(3))
    cut = second.index(b'"at"')
    write(log, warning(1), line(warning(2)) + b" " + second[:cut] + b"\n" + second[cut:] + b"\n")
    with pytest.raises(CorruptLog) as caught:
        seqs(log)
    assert caught.value.line == 2


def test_skip_bad_skips_a_double_line_and_counts_it(log: Path) -> None:
    write(log, warning(1), line(warning(2)) + line(warning(3)) + b"\n", warning(4))
    report = ReadReport()
    assert seqs(log, "skip_bad", report) == [1, 4]
    assert report.skipped_bad == 1


@pytest.mark.parametrize("mode", ["strict", "tolerant", "skip_bad"])
def test_a_last_line_holding_two_events_is_not_a_torn_tail(log: Path, mode: ReadMode) -> None:
    write(log, warning(1), line(warning(2)) + line(warning(3)) + b"\n")
    report = ReadReport()
    if mode == "skip_bad":
        assert seqs(log, mode, report) == [1]
        assert report.skipped_bad == 1
    else:
        with pytest.raises(CorruptLog) as caught:
            seqs(log, mode, report)
        assert caught.value.line == 2
    assert report.torn_tail is None


@pytest.mark.parametrize(
    "ending",
    [line(warning(2)) + line(warning(3)), line(warning(2)) + b'{"kind":"warn'],
    ids=["two-whole-events", "an-event-and-a-torn-one"],
)
def test_an_unterminated_last_line_holding_an_event_and_more_is_not_torn(
    log: Path, ending: bytes
) -> None:
    write(log, warning(1), ending)
    report = ReadReport()
    with pytest.raises(CorruptLog) as caught:
        seqs(log, "tolerant", report)
    assert caught.value.line == 2
    assert report.torn_tail is None


def test_a_whole_event_without_its_newline_is_still_a_torn_tail(log: Path) -> None:
    """What a write cut just before its newline leaves: never acknowledged,
    never read, so it is torn (and recorded when the writer cuts it)."""
    write(log, warning(1), line(warning(2)) + b" ")
    report = ReadReport()
    assert seqs(log, report=report) == [1]
    assert report.torn_tail is not None


def test_a_block_with_two_events_on_a_line_asks_for_the_slow_path() -> None:
    block = line(warning(1)) + line(warning(2)) + b"\n"
    assert decode_block(block, 0, len(block), stale_types()) is None


# -- item 3: a gap in seqs -----------------------------------------------------


def test_a_missing_line_is_corrupt_in_strict_mode(log: Path, sub_block: int) -> None:
    write(log, *warnings(1, 3), *warnings(5, 7))
    with pytest.raises(CorruptLog) as caught:
        seqs(log)
    error = caught.value
    assert (error.line, error.last_good_seq) == (4, 3)
    assert "3" in error.reason and "5" in error.reason and "missing" in error.reason


def test_a_log_that_does_not_start_at_seq_one_is_corrupt(log: Path) -> None:
    write(log, *warnings(2, 4))
    with pytest.raises(CorruptLog) as caught:
        seqs(log)
    assert (caught.value.line, caught.value.last_good_seq) == (1, 0)


@pytest.mark.parametrize("mode", ["tolerant", "skip_bad"])
def test_tolerant_reads_count_gaps(log: Path, mode: ReadMode, sub_block: int) -> None:
    write(log, *warnings(1, 3), *warnings(5, 7), *warnings(10, 10))
    report = ReadReport()
    assert seqs(log, mode, report) == [1, 2, 3, 5, 6, 7, 10]
    assert (report.seq_gaps, report.missing_seqs, report.first_gap) == (2, 3, (3, 5))


@pytest.mark.parametrize("mode", ["strict", "tolerant"])
def test_a_repeated_seq_is_corrupt(log: Path, mode: ReadMode, sub_block: int) -> None:
    write(log, *warnings(1, 3), warning(3), *warnings(4, 5))
    with pytest.raises(CorruptLog) as caught:
        seqs(log, mode)
    assert (caught.value.line, caught.value.last_good_seq) == (4, 3)
    assert "not after" in caught.value.reason


def test_skip_bad_skips_a_repeated_seq_and_counts_it(log: Path, sub_block: int) -> None:
    write(log, *warnings(1, 3), warning(3), warning(2), *warnings(4, 5))
    report = ReadReport()
    assert seqs(log, "skip_bad", report) == [1, 2, 3, 4, 5]
    assert report.repeated_seqs == 2
    assert report.seq_gaps == 0


def test_a_gap_filled_by_skipped_bad_lines_is_not_counted_twice(log: Path) -> None:
    write(log, *warnings(1, 2), b"garbage\n", *warnings(4, 5))
    report = ReadReport()
    assert seqs(log, "skip_bad", report) == [1, 2, 4, 5]
    assert (report.skipped_bad, report.seq_gaps) == (1, 0)


def test_unknown_kinds_keep_their_place_in_the_numbering(log: Path) -> None:
    unknown = b'{"kind":"hologram","seq":3,"at":1,"thread_id":"thr_test"}\n'
    write(log, *warnings(1, 2), unknown, *warnings(4, 5))
    report = ReadReport()
    assert seqs(log, "tolerant", report) == [1, 2, 4, 5]
    assert report.seq_gaps == 0


def test_a_window_still_checks_the_seqs_before_it(log: Path) -> None:
    write(log, *warnings(1, 3), *warnings(5, 9))
    with pytest.raises(CorruptLog):
        [e.seq for e in read_log(log, after=6, until=8)]
    assert [e.seq for e in read_log(log, until=3)] == [1, 2, 3]


# -- item 4: deep nesting --------------------------------------------------------


@pytest.mark.parametrize("mode", ["strict", "tolerant"])
def test_a_deeply_nested_line_is_a_corrupt_line(log: Path, mode: ReadMode, sub_block: int) -> None:
    write(log, *warnings(1, 2), DEEP + b"\n", *warnings(4, 5))
    with pytest.raises(CorruptLog) as caught:
        seqs(log, mode)
    assert (caught.value.line, caught.value.last_good_seq) == (3, 2)
    assert "nested" in caught.value.reason


def test_skip_bad_skips_a_deeply_nested_line(log: Path) -> None:
    write(log, *warnings(1, 2), DEEP + b"\n", *warnings(4, 5))
    report = ReadReport()
    assert seqs(log, "skip_bad", report) == [1, 2, 4, 5]
    assert report.skipped_bad == 1


@pytest.mark.parametrize("ending", [b"\n", b""], ids=["terminated", "unterminated"])
def test_a_deeply_nested_last_line_is_corrupt_not_torn(log: Path, ending: bytes) -> None:
    """A line the decoder cannot follow may be a good event (the limit
    depends on the stack): it is never cut as a torn tail."""
    write(log, *warnings(1, 2), DEEP + ending)
    report = ReadReport()
    with pytest.raises(CorruptLog) as caught:
        seqs(log, "tolerant", report)
    assert caught.value.line == 3
    assert report.torn_tail is None


# -- item 5: a known kind at a newer version --------------------------------------


def newer(seq: int) -> bytes:
    return line(warning(seq)).replace(b'"warning",', b'"warning","v":2,') + b"\n"


def test_a_newer_version_of_a_known_kind_is_refused_in_strict_mode(
    log: Path, sub_block: int
) -> None:
    write(log, *warnings(1, 2), newer(3), *warnings(4, 5))
    with pytest.raises(UnknownEventKind) as caught:
        seqs(log)
    assert (caught.value.line, caught.value.kind) == (3, "warning v2")


def test_a_newer_version_of_a_known_kind_is_counted_in_tolerant_mode(
    log: Path, sub_block: int
) -> None:
    write(log, *warnings(1, 2), newer(3), *warnings(4, 5))
    report = ReadReport()
    assert seqs(log, "tolerant", report) == [1, 2, 4, 5]
    assert report.unknown_kinds == {"warning v2": 1}


def test_a_version_below_one_is_corrupt(log: Path, sub_block: int) -> None:
    zero = line(warning(3)).replace(b'"warning",', b'"warning","v":0,') + b"\n"
    write(log, *warnings(1, 2), zero, *warnings(4, 5))
    with pytest.raises(CorruptLog) as caught:
        seqs(log, "tolerant")
    assert caught.value.line == 3
