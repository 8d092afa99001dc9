"""A seq past 2^63 - 1 or negative, or an ``at`` no date can show, is a
corrupt line: every reader refuses it naming the line (and seq 0, which
only a preview on the stream has), a writer never carries on from it, and
a torn last line holding one is cut like any other."""

from __future__ import annotations

from pathlib import Path

import pytest

from kun.contracts.events import MAX_SEQ, LogRepaired
from kun.store import CorruptLog, JsonlEventStore, ReadMode, ReadReport, log_path, read_log
from kun.store.codec import decode_line, encode_line
from kun.store.replay import replay_log
from tests.store.factories import TID, warning, warnings

BAD_SEQS = [MAX_SEQ + 1, 1 << 64, 1 << 70, -3]


def odd(seq: int, at: int = 1_700_000_000_003, kind: str = "warning") -> bytes:
    return b'{"kind":"%s","seq":%d,"at":%d,"code":"c","message":"m"}' % (kind.encode(), seq, at)


def put(path: Path, data: bytes) -> None:
    path.write_bytes(data)


def content(path: Path) -> bytes:
    return path.read_bytes()


def good(n: int) -> bytes:
    return b"".join(encode_line(e) for e in warnings(1, n))


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def log(home: Path) -> Path:
    path = log_path(home, TID)
    path.parent.mkdir(parents=True)
    return path


@pytest.mark.parametrize("mode", ["strict", "tolerant"])
@pytest.mark.parametrize("seq", BAD_SEQS)
def test_a_seq_out_of_range_is_a_corrupt_line(log: Path, seq: int, mode: ReadMode) -> None:
    log.write_bytes(good(2) + odd(seq) + b"\n" + encode_line(warning(4)))
    with pytest.raises(CorruptLog) as caught:
        list(read_log(log, mode=mode))
    assert (caught.value.line, caught.value.last_good_seq) == (3, 2)
    assert "seq" in caught.value.reason


def test_a_seq_0_in_a_log_is_refused_by_the_fold_naming_the_line(log: Path) -> None:
    log.write_bytes(good(2) + odd(0) + b"\n" + encode_line(warning(4)))
    with pytest.raises(CorruptLog) as caught:
        replay_log(log)
    assert (caught.value.line, caught.value.last_good_seq) == (3, 2)
    assert "seq 0" in caught.value.reason


def test_skip_bad_skips_and_counts_it(log: Path) -> None:
    log.write_bytes(good(2) + odd(MAX_SEQ + 1) + b"\n" + encode_line(warning(3)))
    report = ReadReport()
    assert [e.seq for e in read_log(log, mode="skip_bad", report=report)] == [1, 2, 3]
    assert report.skipped_bad == 1


@pytest.mark.parametrize("at", [-1, 1 << 63, 253_402_300_800_000])
def test_an_at_no_date_can_show_is_a_corrupt_line(log: Path, at: int) -> None:
    log.write_bytes(good(2) + odd(3, at=at) + b"\n")
    with pytest.raises(CorruptLog) as caught:
        list(read_log(log))
    assert caught.value.line == 3 and "at" in caught.value.reason


@pytest.mark.parametrize("seq", [1 << 64, 0, -1])
@pytest.mark.parametrize("kind", ["warning", "a_kind_from_a_newer_kun"])
@pytest.mark.anyio
async def test_the_writer_never_carries_on_from_it(
    home: Path, log: Path, kind: str, seq: int
) -> None:
    put(log, good(2) + odd(seq, kind=kind) + b"\n")
    async with JsonlEventStore(home) as store:
        with pytest.raises(CorruptLog) as caught:
            await store.claim(TID)
    assert caught.value.line == 3
    assert content(log).endswith(b"\n") and b"log_repaired" not in content(log)


@pytest.mark.anyio
async def test_a_torn_last_line_holding_one_is_cut_and_recorded(home: Path, log: Path) -> None:
    put(log, good(2) + odd(MAX_SEQ + 1))
    async with JsonlEventStore(home) as store:
        assert await store.claim(TID) == 3
    events = list(read_log(log))
    assert [e.seq for e in events] == [1, 2, 3]
    assert isinstance(events[-1], LogRepaired)


def test_an_event_not_numbered_yet_still_decodes() -> None:
    """Seq 0 is a live preview on the stream (or a draft): a client decodes
    it; only a log refuses it, where seqs start at 1."""
    assert decode_line(odd(0)).seq == 0
