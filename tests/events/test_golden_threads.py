"""What each golden thread is for, stated as assertions.

The projections in ``events/golden/*.expected.json`` are regenerated when the
reducer changes on purpose; these tests keep a regenerated file from quietly
losing the behaviour its log was written to pin.
"""

from __future__ import annotations

import functools
from typing import TypeVar

import msgspec

from kun.contracts import events as ev
from kun.contracts.items import Approval, AssistantText, ToolCall, ToolResult, UserInput
from kun.domain.reduce import replay
from kun.domain.state import ThreadState, TurnState
from kun.domain.tags import item_type
from kun.domain.usage import sum_usage
from kun.testing.golden_threads import THREADS
from tests.events.scripts import load_script

make_golden = load_script("make_golden")

T = TypeVar("T")


@functools.cache
def _events(name: str) -> tuple[ev.Event, ...]:
    path = make_golden.GOLDEN_DIR / f"{name}{make_golden.LOG_SUFFIX}"
    decoder = msgspec.json.Decoder(ev.Event)
    return tuple(decoder.decode_lines(path.read_bytes()))


def _state(name: str) -> ThreadState:
    return replay(_events(name))


def _of(turn: TurnState, kind: type[T]) -> list[T]:
    return [item for item in turn.items if isinstance(item, kind)]


def test_multi_step_tools_persists_a_parallel_batch_in_call_order() -> None:
    events = _events("multi_step_tools")
    (turn,) = _state("multi_step_tools").turns
    calls = _of(turn, ToolCall)
    batch = [c.call_id for c in calls[:3]]
    finished = [e.call_id for e in events if isinstance(e, ev.ToolCallFinished)][:3]
    results = [r.call_id for r in _of(turn, ToolResult)][:3]
    assert [c.name for c in calls[:3]] == ["read_file", "read_file", "grep"]
    assert finished == batch[::-1]
    assert results == batch
    assert [a.status for a in _of(turn, Approval)] == ["approved"]
    assert turn.status == "completed" and turn.usage.calls == 3


def test_usage_totals_are_the_sum_of_usage_events() -> None:
    for name in THREADS:
        usages = [e.usage for e in _events(name) if isinstance(e, ev.Usage)]
        state = _state(name)
        assert state.usage.calls == len(usages), name
        assert state.usage.prompt_tokens == sum(u.prompt_tokens for u in usages), name
        assert state.usage == sum_usage(usages), name


def test_aborted_turn_seals_open_items_or_discards_them() -> None:
    state = _state("aborted_turn")
    done, streaming, running, discarded = state.turns
    assert done.status == "completed"
    text = _of(streaming, AssistantText)[-1]
    assert text.status == "aborted" and text.text
    (bash,) = _of(running, ToolCall)
    assert bash.status == "aborted" and not _of(running, ToolResult)
    assert state.late_events == 1
    assert discarded.discarded_items > 0
    assert [item_type(item) for item in discarded.items] == ["user_message"]


def test_rewound_thread_hides_turns_but_keeps_their_cost() -> None:
    state = _state("rewound_thread")
    first, second, third, after = state.turns
    (rewind,) = state.rewinds
    assert rewind.hidden_turn_ids == (second.turn_id, third.turn_id)
    assert [t.turn_id for t in state.visible_turns] == [first.turn_id, after.turn_id]
    assert state.usage.calls == sum(t.usage.calls for t in state.turns)


def test_rewind_undone_brings_every_turn_back() -> None:
    state = _state("rewind_undone")
    (rewind,) = state.rewinds
    assert rewind.undone_at_seq is not None and rewind.hidden_turn_ids
    assert state.visible_turns == state.turns


def test_forked_thread_aborts_the_turn_open_at_the_fork() -> None:
    events = _events("forked_thread")
    state = _state("forked_thread")
    (forked,) = [e for e in events if isinstance(e, ev.ThreadForked)]
    assert state.forked_from is not None
    assert state.forked_from.thread_id == forked.source_thread_id != state.thread_id
    assert forked.seq == state.forked_from.seq + 1
    before, interrupted, after = state.turns
    assert before.status == after.status == "completed"
    assert (interrupted.status, interrupted.abort_reason) == ("aborted", "forked")
    assert [c.status for c in _of(interrupted, ToolCall)] == ["aborted"]


def test_orphaned_turn_settles_what_the_crash_left_open() -> None:
    state = _state("orphaned_turn")
    (turn,) = state.turns
    assert turn.status == "failed" and turn.error is not None
    assert turn.error.code == "orphaned"
    assert {c.status for c in _of(turn, ToolCall)} == {"unknown_after_crash"}
    assert [a.status for a in _of(turn, Approval)] == ["expired"]
    assert [u.status for u in _of(turn, UserInput)] == ["cancelled"]
    assert state.pending_approvals == () and state.pending_user_inputs == ()


def test_everything_ends_settled_with_its_repair_on_record() -> None:
    state = _state("everything")
    assert all(turn.settled for turn in state.turns)
    assert state.forked_from is not None
    assert len(state.repairs) == 1 and state.turns[-1].error is not None
    assert state.settings.goal is not None and state.settings.todos
    assert any(turn.delegated == "rebased" for turn in state.turns)
