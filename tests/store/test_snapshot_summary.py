"""A thread list's summary of a thread with a snapshot is read from the
snapshot's outline plus the tail (what it needs costs the turns, not the
events), and is exactly the full replay's; a snapshot that cannot be trusted
changes nothing."""

from __future__ import annotations

from pathlib import Path

import msgspec

from kun.app.listing import summarize
from kun.domain.reduce import replay
from kun.store import snapshot as snap
from kun.store.codec import encode_line
from kun.testing.logbuilder import LogBuilder

TID = "thr_summary"


def _turn(b: LogBuilder, n: int) -> None:
    b.start_turn(f"prompt {n}")
    b.assistant_text([f"answer {n}"])
    b.usage(prompt_tokens=100, completion_tokens=5, cost_usd=0.5)
    b.complete()


def _home(tmp_path: Path, turns: int) -> tuple[LogBuilder, Path, Path]:
    b = LogBuilder(TID)
    b.create(workspace="/w", title="the log's title", model="m1")
    for n in range(turns):
        _turn(b, n)
    log = tmp_path / "threads" / TID / "events.jsonl"
    log.parent.mkdir(parents=True)
    log.write_bytes(b"".join(map(encode_line, b.events)))
    return b, log, log.with_name(snap.SNAPSHOT_NAME)


def test_the_summary_is_read_from_the_snapshot_and_the_tail(tmp_path: Path) -> None:
    """A (deliberately wrong) title in the snapshot shows, so the prefix was
    not replayed; the turn added after it is counted."""
    b, log, path = _home(tmp_path, 3)
    state = replay(b.events)
    marked = msgspec.structs.replace(
        state, settings=msgspec.structs.replace(state.settings, title="from the snapshot")
    )
    assert snap.write_snapshot(path, log, marked)
    _turn(b, 3)
    log.write_bytes(b"".join(map(encode_line, b.events)))
    summary = summarize(tmp_path, TID)
    assert summary.title == "from the snapshot"
    assert summary.turns == 4
    assert summary.usage == replay(b.events).usage


def test_with_a_true_snapshot_the_summary_is_the_full_replays(tmp_path: Path) -> None:
    b, log, path = _home(tmp_path, 3)
    before = summarize(tmp_path, TID)
    assert snap.write_snapshot(path, log, replay(b.events))
    assert summarize(tmp_path, TID) == before


def test_a_snapshot_that_cannot_be_trusted_changes_nothing(tmp_path: Path) -> None:
    b, log, path = _home(tmp_path, 3)
    state = replay(b.events)
    marked = msgspec.structs.replace(
        state, settings=msgspec.structs.replace(state.settings, title="from the snapshot")
    )
    assert snap.write_snapshot(path, log, marked)
    data = path.read_bytes()
    header, body = snap.unpack(data)
    for damaged in (
        data[: len(data) - len(body) + 20],
        snap.pack(msgspec.structs.replace(header, code=b"\0" * 16), bytes(body)),
        snap.pack(msgspec.structs.replace(header, last_seq=header.last_seq - 1), bytes(body)),
    ):
        path.write_bytes(damaged)
        assert summarize(tmp_path, TID).title == "the log's title"
    path.write_bytes(data)
    assert summarize(tmp_path, TID).title == "from the snapshot"
