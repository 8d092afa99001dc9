"""``stream_replay`` from a snapshot beside the log: its settled turns come
out as its frames are read and only the tail is folded, unless the tail may
rewind; whatever the split, the pieces are the full replay's, and a frame
that fails after some turns came out hands the rest over to a fold of the
whole log."""

from __future__ import annotations

import tempfile
from pathlib import Path

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from kun.contracts import events as ev
from kun.domain.reduce import replay
from kun.domain.state import ThreadState, TurnState
from kun.store.codec import encode_line
from kun.store.replay import replay_log
from kun.store.snapshot import SNAPSHOT_NAME, write_snapshot
from kun.store.streaming import stream_replay
from kun.testing.logbuilder import LogBuilder
from tests.properties.strategies import thread_logs


def _write(folder: Path, events: list[ev.Event]) -> tuple[Path, list[int]]:
    folder.mkdir(parents=True, exist_ok=True)
    log = folder / "events.jsonl"
    lines = [encode_line(e) for e in events]
    log.write_bytes(b"".join(lines))
    offsets, total = [], 0
    for line in lines:
        total += len(line)
        offsets.append(total)
    return log, offsets


def _pieces(log: Path) -> tuple[list[TurnState], ThreadState]:
    *turns, state = stream_replay(log, mode="tolerant")
    assert isinstance(state, ThreadState)
    return turns, state  # type: ignore[return-value]


@given(thread_logs(max_steps=30), st.data())
@settings(max_examples=120, deadline=None)
def test_a_snapshot_at_any_split_streams_the_full_replay(
    events: list[ev.Event], data: st.DataObject
) -> None:
    split = data.draw(st.integers(1, len(events)), label="split")
    with tempfile.TemporaryDirectory() as tmp:
        log, offsets = _write(Path(tmp) / "t_prop", events)
        state = replay(events[:split])
        assert write_snapshot(log.with_name(SNAPSHOT_NAME), log, state, offsets[split - 1])
        whole = replay_log(log, mode="tolerant")
        turns, shell = _pieces(log)
        assert tuple(turns) == whole.turns
        assert msgspec.structs.replace(shell, turns=()) == msgspec.structs.replace(whole, turns=())


def _planted(tmp_path: Path, *, rewind_after: bool = False) -> tuple[Path, list[ev.Event]]:
    """Two settled turns and a snapshot of them whose first turn says it
    ran on the model 'planted' (a full replay says otherwise)."""
    b = LogBuilder("t_snap")
    b.create(workspace="/w", title="two turns")
    first = b.start_turn("question 0")
    b.assistant_text(["answer 0"])
    b.complete()
    b.start_turn("question 1")
    b.assistant_text(["answer 1"])
    b.complete()
    state = replay(b.events)
    marked = msgspec.structs.replace(state.turns[0], model="planted")
    state = msgspec.structs.replace(state, turns=(marked, *state.turns[1:]))
    if rewind_after:
        b.rewind(first)
    log, offsets = _write(tmp_path / "t_snap", b.events)
    assert write_snapshot(
        log.with_name(SNAPSHOT_NAME), log, state, offsets[len(offsets) - 1 - rewind_after]
    )
    return log, b.events


def test_the_turns_come_from_the_snapshot(tmp_path: Path) -> None:
    log, _ = _planted(tmp_path)
    turns, shell = _pieces(log)
    assert turns[0].model == "planted" and len(turns) == 2
    assert shell.turns[0].items == () and shell.status == "completed"


def test_a_tail_that_may_rewind_is_not_streamed_from_the_snapshot(tmp_path: Path) -> None:
    log, events = _planted(tmp_path, rewind_after=True)
    turns, _ = _pieces(log)
    assert turns[0].model != "planted"
    assert tuple(turns) == replay(events).turns


def test_a_frame_that_fails_hands_the_rest_to_the_log(tmp_path: Path) -> None:
    log, events = _planted(tmp_path)
    snapshot = log.with_name(SNAPSHOT_NAME)
    data = snapshot.read_bytes()
    last = data.rindex(b'"turn_id"')
    snapshot.write_bytes(data[:last] + b'"turn_i"!' + data[last + 9 :])
    turns, shell = _pieces(log)
    assert turns[0].model == "planted", "the first turn came from the snapshot"
    assert turns[1:] == list(replay(events).turns[1:])
    assert shell.last_seq == events[-1].seq
