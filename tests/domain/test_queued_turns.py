"""The reducer on queued turns: ``turn_queued`` records a waiting turn with
its message; its ``turn_started`` makes it run; ``turn_aborted`` cancels it."""

from __future__ import annotations

import pytest

from kun.contracts import events as ev
from kun.contracts.items import UserMessage
from kun.contracts.threads import Goal
from kun.domain.compaction import visible_history
from kun.domain.errors import ProjectionError
from kun.domain.reduce import replay
from kun.domain.transcript import render_transcript
from kun.testing.logbuilder import LogBuilder


def _running() -> LogBuilder:
    b = LogBuilder("t_q")
    b.create(workspace="/w", title="queue")
    b.start_turn("first")
    return b


def _queue(b: LogBuilder, text: str, **options: object) -> tuple[str, UserMessage]:
    turn_id = b.next_id("turn")
    message = UserMessage(id=b.next_id("msg"), text=text)
    b.emit(ev.TurnQueued, turn_id=turn_id, message=message, **options)
    return turn_id, message


def test_a_queued_turn_waits_with_its_message_and_options() -> None:
    b = _running()
    running = b.turn_id
    second, message = _queue(b, "second", model="m2", plan_mode=True)
    third, _ = _queue(b, "third")
    state = replay(b.events)
    turn = state.turns[1]
    assert (turn.turn_id, turn.status, turn.items) == (second, "queued", (message,))
    assert (turn.model, turn.plan_mode) == ("m2", True)
    assert state.queued_turns == (second, third)
    assert state.running_turn is not None and state.running_turn.turn_id == running
    assert state.status == "running"


def test_the_running_turn_is_not_told_a_queued_message() -> None:
    b = _running()
    _queue(b, "later")
    history = visible_history(replay(b.events).turns)
    assert [item.text for item in history if isinstance(item, UserMessage)] == ["first"]


def test_turn_started_runs_the_queued_turn_with_its_recorded_message() -> None:
    b = _running()
    second, message = _queue(b, "second")
    b.complete()
    started = b.emit(ev.TurnStarted, turn_id=second, model="m1")
    state = replay(b.events)
    turn = state.turns[1]
    assert (turn.status, turn.items, turn.model) == ("running", (message,), "m1")
    assert (turn.started_seq, turn.started_at) == (started.seq, started.at)
    assert state.queued_turns == ()
    assert state.running_turn == turn


def test_a_cancelled_queued_turn_settles_without_running() -> None:
    b = _running()
    b.update(goal=Goal(objective="ship it"))
    second, message = _queue(b, "second")
    b.emit(ev.TurnAborted, turn_id=second, reason="cancelled")
    state = replay(b.events)
    turn = state.turns[1]
    assert (turn.status, turn.abort_reason, turn.items) == ("aborted", "cancelled", (message,))
    assert state.queued_turns == ()
    assert state.running_turn is not None and state.running_turn.turn_id == b.turn_id
    assert state.settings.goal is not None and state.settings.goal.time_used_ms == 0
    b.complete()
    assert replay(b.events).status == "completed"


def test_a_turn_is_queued_or_started_once() -> None:
    b = _running()
    second, message = _queue(b, "second")
    with pytest.raises(ProjectionError, match="queued twice"):
        replay([*b.events, _again(b, ev.TurnQueued, second, message=message)])
    b.complete()
    b.emit(ev.TurnStarted, turn_id=second)
    with pytest.raises(ProjectionError, match="started twice"):
        replay([*b.events, _again(b, ev.TurnStarted, second)])


def _again(b: LogBuilder, cls: type[ev.EventBase], turn_id: str, **fields: object) -> ev.Event:
    last = b.events[-1]
    return cls(seq=last.seq + 1, at=last.at, thread_id=last.thread_id, turn_id=turn_id, **fields)  # type: ignore[return-value]


def test_the_transcript_says_a_turn_waits_or_never_ran() -> None:
    b = _running()
    _queue(b, "waits")
    cancelled, _ = _queue(b, "dropped")
    b.emit(ev.TurnAborted, turn_id=cancelled, reason="cancelled")
    lines = render_transcript(replay(b.events))
    assert lines[lines.index("  user > waits") - 1].startswith("== turn 2 · queued · turn_")
    assert "  queued: it starts when the turns before it have ended" in lines
    header = lines[lines.index("  user > dropped") - 1]
    assert header == f"== turn 3 · aborted · {cancelled} =="  # no duration: it never ran
    assert "  aborted: cancelled while queued (it never ran)" in lines
