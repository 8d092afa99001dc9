"""Snapshots (issue 10, item 3): snapshot + tail equals a full replay at every
split, and a snapshot that does not describe a prefix of this very log is
ignored, never trusted over the log."""

from __future__ import annotations

import tempfile
from pathlib import Path

import msgspec
import pytest
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
    """Write the log; the byte offset just after each event's line."""
    lines = [encode_line(e) for e in events]
    path.write_bytes(b"".join(lines))
    offsets, total = [], 0
    for line in lines:
        total += len(line)
        offsets.append(total)
    return offsets


@given(thread_logs(max_steps=30), st.data())
@settings(max_examples=150, deadline=None)
def test_snapshot_at_any_split_plus_tail_equals_full_replay(
    events: list[ev.Event], data: st.DataObject
) -> None:
    split = data.draw(st.integers(1, len(events)), label="split")
    with tempfile.TemporaryDirectory() as tmp:
        log, path = Path(tmp) / "events.jsonl", Path(tmp) / "snapshot.msgpack"
        offsets = _write_log(log, events)
        assert snap.write_snapshot(path, log, replay(events[:split]), offsets[split - 1])
        projector = snap.resume(path, log, "t_prop")
        assert projector is not None
        assert projector.snapshot() == replay(events)
        assert projector.last_seq == events[-1].seq


@given(thread_logs(max_steps=30))
@settings(max_examples=50, deadline=None)
def test_the_projection_round_trips_exactly_through_the_snapshot(events: list[ev.Event]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        log, path = Path(tmp) / "events.jsonl", Path(tmp) / "snapshot.msgpack"
        _write_log(log, events)
        state = replay(events)
        assert snap.write_snapshot(path, log, state)
        projector = snap.resume(path, log, "t_prop")
        assert projector is not None
        assert projector.snapshot() == state


def _turn(b: LogBuilder, question: str, answer: str) -> None:
    b.start_turn(question)
    b.assistant_text([answer[:3], answer[3:]])
    b.run_tool("read", {"path": question}, answer)
    b.complete()


def _thread(tmp_path: Path, turns: int = 3) -> tuple[LogBuilder, Path, Path]:
    b = LogBuilder("t1")
    b.create(workspace="/w", title="hello")
    for n in range(turns):
        _turn(b, f"question {n}", f"answer {n}")
    (tmp_path / "t1").mkdir()
    log, path = tmp_path / "t1" / "events.jsonl", tmp_path / "snapshot.msgpack"
    _write_log(log, b.events)
    return b, log, path


def test_resume_folds_only_the_tail(tmp_path: Path) -> None:
    """The snapshot's state is what the fold starts from: a (deliberately
    wrong) title in it survives, so the prefix was not replayed."""
    b, log, path = _thread(tmp_path)
    state = replay(b.events)
    marked = msgspec.structs.replace(
        state, settings=msgspec.structs.replace(state.settings, title="from the snapshot")
    )
    assert snap.write_snapshot(path, log, marked)
    _turn(b, "more", "tail")
    _write_log(log, b.events)
    projector = snap.resume(path, log, "t1")
    assert projector is not None
    result = projector.snapshot()
    assert result.settings.title == "from the snapshot"
    assert result.last_seq == b.events[-1].seq
    assert len(result.turns) == len(state.turns) + 1


def test_missing_snapshot_is_none(tmp_path: Path) -> None:
    _, log, path = _thread(tmp_path)
    assert snap.resume(path, log, "t1") is None


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[: len(data) // 2],
        lambda data: b"",
        lambda data: b"\x00" * len(data),
        lambda data: data[:-1] + bytes([data[-1] ^ 0xFF]),
        lambda data: b"garbage" + data,
    ],
    ids=["truncated", "empty", "zeroed", "flipped_last_byte", "prefixed"],
)
def test_a_corrupt_snapshot_is_ignored(tmp_path: Path, damage: object) -> None:
    _, log, path = _thread(tmp_path)
    assert snap.write_snapshot(path, log, replay(_events(log)))
    path.write_bytes(damage(path.read_bytes()))  # type: ignore[operator]
    assert snap.resume(path, log, "t1") is None


def _events(log: Path) -> list[ev.Event]:
    from kun.store.reader import read_log

    return list(read_log(log))


def test_a_snapshot_of_another_thread_or_format_is_ignored(tmp_path: Path) -> None:
    _, log, path = _thread(tmp_path)
    assert snap.write_snapshot(path, log, replay(_events(log)))
    assert snap.resume(path, log, "t2") is None
    header, body = snap.unpack(path.read_bytes())
    other = msgspec.structs.replace(header, format=snap.FORMAT + 1)
    path.write_bytes(snap.pack(other, bytes(body)))
    assert snap.resume(path, log, "t1") is None
    path.write_bytes(snap.pack(header, bytes(body)))
    assert snap.resume(path, log, "t1") is not None


def test_a_snapshot_folded_by_other_code_is_ignored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another kun, or the same one before a reducer changed, may fold the
    same log to another projection: its snapshot is rebuilt, not trusted."""
    _, log, path = _thread(tmp_path)
    assert snap.write_snapshot(path, log, replay(_events(log)))
    header, body = snap.unpack(path.read_bytes())
    assert header.code == snap.code_digest()
    path.write_bytes(snap.pack(msgspec.structs.replace(header, code=b"\0" * 16), bytes(body)))
    assert snap.resume(path, log, "t1") is None
    assert snap.open_snapshot(path, log, "t1") is None
    path.write_bytes(snap.pack(header, bytes(body)))
    assert snap.resume(path, log, "t1") is not None
    monkeypatch.setattr(snap, "code_digest", lambda: b"upgraded kun....")
    assert snap.resume(path, log, "t1") is None


def test_the_code_digest_follows_the_sources_of_the_fold(tmp_path: Path) -> None:
    files = {
        "contracts/events.py": "A = 1\n",
        "domain/reduce.py": "B = 1\n",
        "store/codec.py": "C = 1\n",
        "store/jsonl.py": "D = 1\n",
        "cli/main.py": "E = 1\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    first = snap.sources_digest(tmp_path)
    assert snap.sources_digest(tmp_path) == first
    for unrelated in ("store/jsonl.py", "cli/main.py"):
        (tmp_path / unrelated).write_text("changed = True\n")
        assert snap.sources_digest(tmp_path) == first, unrelated
    for name in ("contracts/events.py", "domain/reduce.py", "store/codec.py"):
        before = snap.sources_digest(tmp_path)
        (tmp_path / name).write_text(files[name] + "X = 2\n")
        assert snap.sources_digest(tmp_path) != before, name
    (tmp_path / "domain/state.py").write_text("")
    assert snap.sources_digest(tmp_path) != before


def test_a_snapshot_that_lies_about_its_state_is_ignored(tmp_path: Path) -> None:
    _, log, path = _thread(tmp_path)
    assert snap.write_snapshot(path, log, replay(_events(log)))
    header, _ = snap.unpack(path.read_bytes())
    lie = b"".join(snap.encode_state(ThreadState(thread_id="t1", last_seq=1)))
    path.write_bytes(snap.pack(msgspec.structs.replace(header, turns=0), lie))
    assert snap.resume(path, log, "t1") is None


def test_a_log_truncated_below_the_offset_invalidates_it(tmp_path: Path) -> None:
    _, log, path = _thread(tmp_path)
    assert snap.write_snapshot(path, log, replay(_events(log)))
    data = log.read_bytes()
    log.write_bytes(data[: data.rfind(b"\n", 0, len(data) - 1) + 1])
    assert snap.resume(path, log, "t1") is None


def test_a_log_rewritten_below_the_offset_invalidates_it(tmp_path: Path) -> None:
    """Same thread, same seqs, same length, another last line: the digest of
    the line at the offset catches it where a seq check would not."""
    b, log, path = _thread(tmp_path)
    assert snap.write_snapshot(path, log, replay(b.events))
    data = log.read_bytes()
    start = data.rfind(b"\n", 0, len(data) - 1) + 1
    last = msgspec.json.decode(data[start:])
    last["at"] += 1
    rewritten = msgspec.json.encode(last) + b"\n"
    assert len(rewritten) == len(data) - start
    log.write_bytes(data[:start] + rewritten)
    assert snap.resume(path, log, "t1") is None


def test_a_log_regrown_past_a_rewritten_offset_invalidates_it(tmp_path: Path) -> None:
    """Truncated below the offset and grown past it again by other events."""
    b, log, path = _thread(tmp_path, turns=2)
    assert snap.write_snapshot(path, log, replay(b.events))
    other = LogBuilder("t1")
    other.create(workspace="/w", title="a different thread of the same id")
    for n in range(5):
        _turn(other, f"q{n}", f"a{n}")
    _write_log(log, other.events)
    assert snap.resume(path, log, "t1") is None


def test_a_torn_or_bad_tail_falls_back_to_full_replay(tmp_path: Path) -> None:
    _, log, path = _thread(tmp_path)
    assert snap.write_snapshot(path, log, replay(_events(log)))
    with open(log, "ab") as file:
        file.write(b'{"kind":"thread_upd')
    assert snap.resume(path, log, "t1") is None
    data = log.read_bytes()
    log.write_bytes(data[: data.rfind(b"\n") + 1] + b"not json\n")
    assert snap.resume(path, log, "t1") is None


def test_a_tail_with_a_gap_falls_back_to_full_replay(tmp_path: Path) -> None:
    b, log, path = _thread(tmp_path)
    assert snap.write_snapshot(path, log, replay(b.events))
    _turn(b, "more", "tail")
    lines = [encode_line(e) for e in b.events]
    log.write_bytes(b"".join(lines[:-3] + lines[-2:]))
    assert snap.resume(path, log, "t1") is None


def test_write_refuses_an_offset_that_is_not_the_states_last_line(tmp_path: Path) -> None:
    b, log, path = _thread(tmp_path)
    offsets = _write_log(log, b.events)
    state = replay(b.events[:-1])
    assert not snap.write_snapshot(path, log, state)
    assert not snap.write_snapshot(path, log, state, offsets[-2] - 1)
    assert not path.exists()
    assert snap.write_snapshot(path, log, state, offsets[-2])
    assert not list(tmp_path.glob("*.tmp"))


def test_snapshot_path_sits_beside_the_log(tmp_path: Path) -> None:
    assert snap.snapshot_path(tmp_path, "t1") == tmp_path / "threads" / "t1" / "snapshot.msgpack"


def test_a_snapshot_cut_at_a_frame_boundary_is_ignored(tmp_path: Path) -> None:
    """A whole turn missing (or one too many) is caught by the header's count."""
    _, log, path = _thread(tmp_path)
    state = replay(_events(log))
    assert snap.write_snapshot(path, log, state)
    data = path.read_bytes()
    last = b"".join(snap.encode_state(state))[-len(msgspec.json.encode(state.turns[-1])) - 8 :]
    assert data.endswith(last)
    path.write_bytes(data[: -len(last)])
    assert snap.resume(path, log, "t1") is None
    path.write_bytes(data + last)
    assert snap.resume(path, log, "t1") is None
    path.write_bytes(data)
    assert snap.resume(path, log, "t1") is not None
