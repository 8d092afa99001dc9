"""SPEC §4 invariants of the reducers, stated as properties over legal logs."""

from __future__ import annotations

import functools

import msgspec
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from kun.contracts import events as ev
from kun.contracts.items import OPEN_STATUSES, ToolCall, ToolResult
from kun.domain.errors import ProjectionError
from kun.domain.reduce import Projector, fold, reduce, replay
from kun.domain.state import ThreadState, TurnState
from kun.domain.usage import sum_usage
from tests.properties.strategies import thread_logs

_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(ev.Event)


@given(thread_logs())
def test_determinism(events: list[ev.Event]) -> None:
    assert replay(events) == replay(list(events))
    decoded = [_decoder.decode(_encoder.encode(e)) for e in events]
    assert replay(decoded) == replay(events)


@given(thread_logs(max_steps=20), st.data())
def test_prefix_consistency_at_every_split(events: list[ev.Event], data: st.DataObject) -> None:
    whole = replay(events)
    for split in range(len(events) + 1):
        assert fold(replay(events[:split]), events[split:]) == whole
    one_by_one = functools.reduce(reduce, events, ThreadState(thread_id=""))
    assert one_by_one == whole


@given(thread_logs(max_steps=20))
def test_one_fold_snapshotted_at_every_split_equals_replay_of_each_prefix(
    events: list[ev.Event],
) -> None:
    """The fold keeps counters, fragments and items mutable and caches frozen
    turns: a snapshot taken anywhere must neither leak later events into it
    nor go stale afterwards."""
    projector = Projector()
    assert projector.snapshot() == replay([])
    for split, event in enumerate(events, 1):
        projector.apply(event)
        assert projector.snapshot() == replay(events[:split])


@given(thread_logs(), st.data())
def test_stale_or_duplicate_seq_is_rejected(events: list[ev.Event], data: st.DataObject) -> None:
    state = replay(events)
    stale_seq = data.draw(st.integers(min_value=-3, max_value=state.last_seq))
    stale = ev.TurnSteered(seq=stale_seq, at=0, thread_id=state.thread_id, turn_id="x", text="")
    with pytest.raises(ProjectionError, match="is not after"):
        reduce(state, stale)
    assert [e.seq for e in events] == sorted({e.seq for e in events})


def _settled_view(turn: TurnState) -> tuple[object, ...]:
    return (turn.status, turn.items, turn.error, turn.ended_at, turn.stop_reason)


@given(thread_logs(max_steps=40))
def test_terminal_turn_states_are_absorbing(events: list[ev.Event]) -> None:
    final = {t.turn_id: t for t in replay(events).turns}
    state = ThreadState(thread_id="")
    for event in events:
        state = reduce(state, event)
        for turn in state.turns:
            if turn.settled:
                assert _settled_view(turn) == _settled_view(final[turn.turn_id])


@given(thread_logs(max_steps=40))
def test_settled_turns_leave_nothing_open(events: list[ev.Event]) -> None:
    state = replay(events)
    for turn in state.turns:
        if not turn.settled:
            continue
        assert all(item.status not in OPEN_STATUSES for item in turn.items), turn.items
        assert turn.tools_in_flight == ()
        ids = {item.id for item in turn.items}
        assert not ids & set(state.pending_approvals)
        assert not ids & set(state.pending_user_inputs)


@given(thread_logs(max_steps=40))
def test_every_settled_tool_call_has_one_result_or_is_failed(events: list[ev.Event]) -> None:
    for turn in replay(events).turns:
        if not turn.settled:
            continue
        results = [i.call_id for i in turn.items if isinstance(i, ToolResult)]
        for call in (i for i in turn.items if isinstance(i, ToolCall)):
            if call.status in ("failed", "aborted", "unknown_after_crash"):
                assert results.count(call.call_id) <= 1
            else:
                assert results.count(call.call_id) == 1, (call, results)


@given(thread_logs(max_steps=40))
def test_usage_totals_equal_the_sum_of_usage_events(events: list[ev.Event]) -> None:
    state = replay(events)
    calls = [e for e in events if isinstance(e, ev.Usage)]
    assert state.usage == sum_usage([e.usage for e in calls])
    for turn in state.turns:
        assert turn.usage == sum_usage([e.usage for e in calls if e.turn_id == turn.turn_id])


def _conversation(state: ThreadState) -> tuple[TurnState, ...]:
    return state.visible_turns


def _rewinds_target_visible_turns(events: list[ev.Event]) -> bool:
    """Whether every rewind in ``events`` was taken before a turn visible at
    the time. A rewind before an already-hidden turn hides the visible turns
    after it by position, so dropping its target does not drop its effect."""
    projector = Projector()
    for e in events:
        if isinstance(e, ev.ThreadRewound):
            visible = {t.turn_id for t in projector.snapshot().visible_turns}
            if e.before_turn_id not in visible:
                return False
        projector.apply(e)
    return True


@given(thread_logs(max_steps=40, settle_all=True), st.data())
def test_rewind_shows_the_log_that_never_had_those_turns(
    events: list[ev.Event], data: st.DataObject
) -> None:
    assume(_rewinds_target_visible_turns(events))
    state = replay(events)
    visible = [t.turn_id for t in state.visible_turns]
    if not visible:
        return
    target = data.draw(st.sampled_from(visible))
    dropped = set(visible[visible.index(target) :])
    last = events[-1]
    rewound = [
        *events,
        ev.ThreadRewound(
            seq=last.seq + 1, at=last.at, thread_id=last.thread_id, before_turn_id=target
        ),
    ]
    gone_rewinds = {
        e.seq for e in events if isinstance(e, ev.ThreadRewound) and e.before_turn_id in dropped
    }
    never_had = [
        e
        for e in events
        if e.turn_id not in dropped
        and e.seq not in gone_rewinds
        and not (isinstance(e, ev.ThreadRewindUndone) and e.rewind_seq in gone_rewinds)
    ]
    assert _conversation(replay(rewound)) == _conversation(replay(never_had))
    assert replay(rewound).usage == state.usage


@given(thread_logs(max_steps=40))
@settings(max_examples=50)
def test_encode_decode_round_trips_every_event_exactly(events: list[ev.Event]) -> None:
    for event in events:
        line = _encoder.encode(event)
        back = _decoder.decode(line)
        assert back == event
        assert _encoder.encode(back) == line


@given(thread_logs(max_steps=40))
def test_queued_turns_wait_in_order_holding_only_their_message(events: list[ev.Event]) -> None:
    """At every point: at most one turn runs, the queue is the queued
    turns in ``turn_queued`` order, and a queued turn holds its message
    alone (nothing runs in it before its ``turn_started``)."""
    state = ThreadState(thread_id="")
    queued_order: list[str] = []
    for event in events:
        state = reduce(state, event)
        if isinstance(event, ev.TurnQueued):
            queued_order.append(event.turn_id or "")
        assert sum(t.status == "running" for t in state.turns) <= 1
        waiting = {t.turn_id for t in state.turns if t.status == "queued"}
        assert state.queued_turns == tuple(q for q in queued_order if q in waiting)
        for turn in state.turns:
            if turn.status == "queued":
                assert [type(i).__name__ for i in turn.items] == ["UserMessage"]
