"""``stream_replay`` hands out the projection of ``replay_log`` in pieces:
every turn, whole, then the thread. Without a rewind in the log a turn comes
out as soon as it and the turns before it settle, and the fold forgets its
items; ``kun replay --json`` built from the pieces decodes to the projection."""

from __future__ import annotations

import mmap
import tempfile
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
from hypothesis import given, settings

from kun.app.replaying import json_chunks
from kun.contracts import events as ev
from kun.contracts.events import Event
from kun.domain.state import ThreadState, TurnState
from kun.store import streaming as replay_module
from kun.store.codec import encode_line
from kun.store.port import ReadReport
from kun.store.reader import last_seq_before
from kun.store.replay import replay_log
from kun.store.streaming import may_rewind, stream_replay
from kun.testing.logbuilder import LogBuilder
from tests.properties.strategies import thread_logs

GOLDEN = Path(__file__).resolve().parent.parent.parent / "events" / "golden"


def _pieces(log: Path) -> tuple[list[TurnState], ThreadState]:
    pieces = list(stream_replay(log, mode="tolerant"))
    *turns, state = pieces
    assert isinstance(state, ThreadState)
    assert all(isinstance(turn, TurnState) for turn in turns)
    return turns, state  # type: ignore[return-value]


def _check(log: Path) -> None:
    whole = replay_log(log, mode="tolerant")
    turns, state = _pieces(log)
    assert tuple(turns) == whole.turns
    assert msgspec.structs.replace(state, turns=()) == msgspec.structs.replace(whole, turns=())
    assert [t.status for t in state.turns] == [t.status for t in whole.turns]
    printed = b"".join(json_chunks(stream_replay(log, mode="tolerant")))
    assert msgspec.json.decode(printed) == msgspec.json.decode(msgspec.json.encode(whole))
    assert printed.endswith(b"}\n")
    assert msgspec.json.format(printed[:-1], indent=2) == printed[:-1], "indented as one document"


@pytest.mark.parametrize("golden", sorted(GOLDEN.glob("*.events.jsonl")), ids=lambda p: p.name)
def test_golden_logs_stream_to_their_projection(golden: Path) -> None:
    _check(golden)


@settings(max_examples=80, deadline=None)
@given(thread_logs())
def test_generated_logs_stream_to_their_projection(events: list[Event]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "events.jsonl"
        log.write_bytes(b"".join(encode_line(e) for e in events))
        _check(log)


def _two_turns(tmp_path: Path, *, rewind: bool = False) -> Path:
    b = LogBuilder("t_stream")
    b.create(workspace="/w", title="two turns")
    first = b.start_turn("question 0")
    b.assistant_text(["answer 0"])
    b.complete()
    b.start_turn("question 1")
    b.assistant_text(["answer 1"])
    b.complete()
    if rewind:
        b.rewind(first)
    log = tmp_path / "events.jsonl"
    log.write_bytes(b"".join(encode_line(e) for e in b.events))
    return log


def test_a_settled_turn_comes_out_before_the_log_is_read_to_its_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = _two_turns(tmp_path)
    pulled: list[int] = []
    read = replay_module.read_log

    def counting(*args: object, **kwargs: object) -> Iterator[Event]:
        for event in read(*args, **kwargs):  # type: ignore[arg-type]
            pulled.append(event.seq)
            yield event

    monkeypatch.setattr(replay_module, "read_log", counting)
    monkeypatch.setattr(replay_module, "STREAM_BATCH", 2)
    pieces = stream_replay(log)
    first = next(pieces)
    assert isinstance(first, TurnState) and first.items
    total = len(log.read_bytes().splitlines())
    assert pulled and pulled[-1] < total, "the first turn waited for the whole log"
    *_, state = pieces
    assert isinstance(state, ThreadState)
    assert state.turns[0].items == (), "a turn handed out keeps no items in the fold"
    assert len(state.turns) == 2 and state.status == "completed"


def test_a_log_that_may_rewind_is_folded_whole_first(tmp_path: Path) -> None:
    assert not may_rewind(_two_turns(tmp_path))
    log = _two_turns(tmp_path, rewind=True)
    assert may_rewind(log)
    turns, _ = _pieces(log)
    assert [t.hidden_by for t in turns] == [t.hidden_by for t in replay_log(log).turns]
    assert turns[0].hidden_by is not None


def test_an_empty_log_is_an_empty_thread(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    log.write_bytes(b"")
    assert not may_rewind(log)
    assert list(stream_replay(log)) == [replay_log(log)]
    printed = b"".join(json_chunks(stream_replay(log)))
    assert msgspec.json.decode(printed) == msgspec.json.decode(msgspec.json.encode(replay_log(log)))


def test_the_tag_searched_for_is_the_rewind_kind() -> None:
    line = encode_line(ev.ThreadRewound(seq=2, at=1, thread_id="t", before_turn_id="x"))
    assert replay_module._REWOUND in line


@pytest.mark.parametrize("start", [0, 4080, 4090, 4095, 4096, 8190, 9000])
def test_the_rewind_scan_finds_the_tag_across_its_windows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, start: int
) -> None:
    monkeypatch.setattr(replay_module, "_SCAN_WINDOW", mmap.ALLOCATIONGRANULARITY)
    tag = replay_module._REWOUND
    log = tmp_path / "events.jsonl"
    log.write_bytes(b"x" * start + tag + b"y" * 3)
    assert may_rewind(log)
    log.write_bytes(b"x" * start + tag[:-1] + b"y" * 3)
    assert not may_rewind(log)


def test_a_rewind_appended_after_the_scan_is_not_folded_into_streamed_turns(
    tmp_path: Path,
) -> None:
    """The scan said "no rewind" for the bytes it saw; a writer then appends
    one. The turns already streamed as visible must not be contradicted by
    the thread that follows: the output is the thread as it was scanned."""
    before = _two_turns(tmp_path).read_bytes()
    log = _two_turns(tmp_path, rewind=True)
    assert log.read_bytes().startswith(before)
    *turns, state = stream_replay(log, rewound=lambda: False, scanned=len(before))
    assert isinstance(state, ThreadState)
    assert [t.hidden_by for t in turns] == [None, None]
    assert state.last_seq == replay_log(log).last_seq - 1
    assert [t.hidden_by for t in state.turns] == [None, None]


def test_a_torn_tail_is_still_reported_when_nothing_was_appended(tmp_path: Path) -> None:
    log = _two_turns(tmp_path)
    with log.open("ab") as file:
        file.write(b'{"kind":"warning","seq":99')
    report = ReadReport()
    list(stream_replay(log, mode="tolerant", report=report, scanned=log.stat().st_size))
    assert report.torn_tail is not None


@pytest.mark.parametrize("big", [10, 70_000, 300_000])
def test_the_last_whole_line_is_found_however_long(tmp_path: Path, big: int) -> None:
    log = tmp_path / "events.jsonl"
    long = b'{"kind":"warning","seq":2,"m":"' + b"x" * big + b'"}\n'
    lines = [b'{"kind":"warning","seq":1}\n', long]
    log.write_bytes(b"".join(lines) + b'{"kind":"warning","seq":3')
    size = log.stat().st_size
    assert last_seq_before(log, size) == 2
    assert last_seq_before(log, len(lines[0])) == 1
    assert last_seq_before(log, len(lines[0]) - 1) is None
    assert last_seq_before(log, 0) is None
