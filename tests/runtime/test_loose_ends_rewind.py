"""``kun rewind`` over a turn a dead process left open (issue 12, item 8):
the open turn is settled as orphaned first, so the thread is not left
``running`` with no visible turn."""

from __future__ import annotations

from pathlib import Path

import msgspec
from click.testing import CliRunner

from kun.contracts import events as ev
from kun.domain.reduce import replay
from kun.entry import cli
from kun.store.jsonl import JsonlEventStore
from kun.testing.logbuilder import LogBuilder


def _write(home: Path, events: list[ev.Event]) -> None:
    path = home / "threads" / events[0].thread_id / "events.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(msgspec.json.encode(e) + b"\n" for e in events))


def _crashed(thread_id: str) -> list[ev.Event]:
    """Two completed turns, then a third cut off mid-answer."""
    b = LogBuilder(thread_id)
    b.create(workspace="/w", provider="p", model="m")
    for n in (1, 2):
        b.start_turn(f"prompt {n}")
        b.assistant_text([f"answer {n}"])
        b.complete()
    b.start_turn("prompt 3")
    b.text_deltas(["half an"])
    return b.events


def _kun(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def _log(home: Path, thread_id: str) -> list[ev.Event]:
    return list(JsonlEventStore(home).read(thread_id))


def test_rewinding_the_open_turn_settles_it_first(tmp_path: Path) -> None:
    _write(tmp_path, _crashed("t_dead"))
    code, out, err = _kun("rewind", "t_dead", "--before-turn", "3", "--home", str(tmp_path))
    assert code == 0, err
    assert "hid turn 3 (turn 3 is" in out
    events = _log(tmp_path, "t_dead")
    state = replay(events)
    assert state.status == "completed"
    assert [t.status for t in state.turns] == ["completed", "completed", "failed"]
    assert len(state.visible_turns) == 2
    kinds = [type(e) for e in events]
    assert kinds.index(ev.TurnFailed) < kinds.index(ev.ThreadRewound)
    failed = next(e for e in events if isinstance(e, ev.TurnFailed))
    assert failed.code == "orphaned"


def test_rewinding_everything_over_an_open_turn_leaves_the_thread_idle(tmp_path: Path) -> None:
    _write(tmp_path, _crashed("t_dead"))
    code, _, err = _kun("rewind", "t_dead", "--before-turn", "1", "--home", str(tmp_path))
    assert code == 0, err
    state = replay(_log(tmp_path, "t_dead"))
    assert state.status == "idle" and state.visible_turns == ()
    assert all(t.settled for t in state.turns)
    code, out, err = _kun("rewind", "t_dead", "--undo", "--home", str(tmp_path))
    assert code == 0, err
    assert "brought back 3 turns " in out
    state = replay(_log(tmp_path, "t_dead"))
    assert state.status == "failed" and len(state.visible_turns) == 3
