"""The outline of a snapshot (the thread, its settled turns without their
items) plus the tail is a full replay but for those items, at every split:
what a summary of the thread reads costs the turns, not the events."""

from __future__ import annotations

import tempfile
from pathlib import Path

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from kun.contracts import events as ev
from kun.domain.reduce import replay
from kun.domain.state import ThreadState
from kun.store import snapshot as snap
from kun.store.codec import encode_line
from kun.testing.logbuilder import LogBuilder
from tests.properties.strategies import thread_logs


def _write_log(path: Path, events: list[ev.Event]) -> list[int]:
    lines = [encode_line(e) for e in events]
    path.write_bytes(b"".join(lines))
    ends, total = [], 0
    for line in lines:
        total += len(line)
        ends.append(total)
    return ends


def _without_items(state: ThreadState) -> ThreadState:
    strip = msgspec.structs.replace
    return strip(state, turns=tuple(strip(t, items=()) for t in state.turns))


@given(thread_logs(max_steps=30), st.data())
@settings(max_examples=200, deadline=None)
def test_outline_at_any_split_plus_tail_equals_full_replay_but_settled_items(
    events: list[ev.Event], data: st.DataObject
) -> None:
    split = data.draw(st.integers(1, len(events)), label="split")
    with tempfile.TemporaryDirectory() as tmp:
        log, path = Path(tmp) / "events.jsonl", Path(tmp) / "snapshot.msgpack"
        ends = _write_log(log, events)
        at_split = replay(events[:split])
        assert snap.write_snapshot(path, log, at_split, ends[split - 1])
        outline = snap.read_outline(path, log, "t_prop")
        full = replay(events)
        assert outline is not None
        assert _without_items(outline) == _without_items(full)
        settled = {t.turn_id for t in at_split.turns if t.settled}
        for turn, whole in zip(outline.turns, full.turns, strict=True):
            if turn.turn_id not in settled:
                assert turn.items == whole.items, turn.turn_id
        resumed = snap.resume(path, log, "t_prop")
        assert resumed is not None
        assert resumed.snapshot() == full


def test_the_outline_reads_no_settled_items(tmp_path: Path) -> None:
    b = LogBuilder("t1")
    b.create(workspace="/w", title="hello")
    for n in range(3):
        b.start_turn(f"question {n}")
        b.assistant_text([f"answer {n}"])
        b.complete()
    b.start_turn("still open")
    (tmp_path / "t1").mkdir()
    log, path = tmp_path / "t1" / "events.jsonl", tmp_path / "snapshot.msgpack"
    _write_log(log, b.events)
    state = replay(b.events)
    assert snap.write_snapshot(path, log, state)
    outline = snap.read_outline(path, log, "t1")
    assert outline is not None
    assert [len(t.items) for t in outline.turns] == [0, 0, 0, len(state.turns[-1].items)]
    assert len(state.turns[-1].items) > 0
    assert outline.status == state.status == "running"
    assert outline.settings == state.settings and outline.usage == state.usage


def test_an_outline_that_holds_settled_items_is_ignored(tmp_path: Path) -> None:
    """A frame that contradicts the layout is corruption, as any other."""
    b = LogBuilder("t1")
    b.create()
    b.start_turn("hi")
    b.assistant_text(["there"])
    b.complete()
    (tmp_path / "t1").mkdir()
    log, path = tmp_path / "t1" / "events.jsonl", tmp_path / "snapshot.msgpack"
    _write_log(log, b.events)
    state = replay(b.events)
    assert snap.write_snapshot(path, log, state)
    header, _ = snap.unpack(path.read_bytes())
    frames = b"".join(
        len(data).to_bytes(8, "big") + data
        for data in map(msgspec.json.encode, (state, *state.turns))
    )
    path.write_bytes(snap.pack(header, frames))
    assert snap.read_outline(path, log, "t1") is None
    assert snap.resume(path, log, "t1") is None
    assert snap.open_snapshot(path, log, "t1") is None
