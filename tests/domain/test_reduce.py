"""Example tests that pin the reducer's behaviour on the protocol's edge cases."""

from __future__ import annotations

import msgspec
import pytest

from kun.contracts import events as ev
from kun.contracts.items import AssistantText, ToolCall, ToolResult, UserInput
from kun.contracts.threads import Goal, Todo
from kun.contracts.usage import UsageSnapshot
from kun.domain.errors import ProjectionError
from kun.domain.fork import fork_events
from kun.domain.reduce import Projector, reduce, replay
from kun.testing.logbuilder import LogBuilder


def _builder() -> LogBuilder:
    b = LogBuilder("t_ex")
    b.create(workspace="/w", title="demo")
    return b


def test_deltas_build_text_and_the_completed_item_replaces_it() -> None:
    b = _builder()
    turn = b.start_turn("hi")
    item_id = b.text_deltas(["Hel", "lo"])
    assert replay(b.events).turns[0].items[1] == AssistantText(
        id=item_id, status="in_progress", text="Hello"
    )
    b.item(AssistantText(id=item_id, text="Hello, world"))
    b.complete()
    items = replay(b.events).turns[0].items
    assert [i.id for i in items].count(item_id) == 1
    assert items[1] == AssistantText(id=item_id, text="Hello, world")
    assert replay(b.events).turns[0].turn_id == turn


def test_streamed_tool_call_fragments_concatenate_until_the_call_is_created() -> None:
    b = _builder()
    b.start_turn("read it")
    b.emit(
        ev.ToolCallDelta,
        turn_id=b.turn_id,
        item_id="c1",
        call_id="k1",
        name="read_",
        arguments='{"pa',
    )
    b.emit(
        ev.ToolCallDelta,
        turn_id=b.turn_id,
        item_id="c1",
        call_id="k1",
        name="file",
        arguments='th": "a"}',
    )
    call = replay(b.events).turns[0].items[1]
    assert isinstance(call, ToolCall)
    assert (call.name, call.arguments_text, call.status) == (
        "read_file",
        '{"path": "a"}',
        "in_progress",
    )


def test_settling_finalizes_every_open_item() -> None:
    b = _builder()
    b.start_turn("go")
    b.assistant_text(["partial"], complete=False)
    call = b.tool_call("bash", {"cmd": "make"})
    approval = b.request_approval(call, "run make")
    question = b.ask_user("which branch?", ("main", "dev"))
    b.abort()
    state = replay(b.events)
    statuses = {i.id: i.status for i in state.turns[0].items}
    assert statuses[approval] == "expired"
    assert statuses[question] == "cancelled"
    assert statuses[call.id] == "aborted"
    assert [s for s in statuses.values() if s == "aborted"] == ["aborted", "aborted"]
    assert state.pending_approvals == () and state.pending_user_inputs == ()


def test_an_orphaned_turn_marks_started_calls_unknown_after_crash() -> None:
    b = _builder()
    b.start_turn("deploy")
    started = b.tool_call("bash", {"cmd": "deploy.sh"})
    b.start_tool(started)
    waiting = b.tool_call("read_file", {"path": "x"})
    b.fail("orphaned", "the process that ran this turn is gone")
    turn = replay(b.events).turns[0]
    by_id = {i.id: i.status for i in turn.items}
    assert by_id[started.id] == "unknown_after_crash"
    assert by_id[waiting.id] == "failed"
    assert turn.error is not None and turn.error.code == "orphaned"
    assert turn.tools_in_flight == ()


def test_tool_result_closes_the_call_and_in_flight_list() -> None:
    b = _builder()
    b.start_turn("read")
    call = b.tool_call("read_file", {"path": "a.py"})
    b.start_tool(call)
    assert replay(b.events).turns[0].tools_in_flight == (call.id,)
    result = b.finish_tool(call, "print(1)")
    b.complete()
    turn = replay(b.events).turns[0]
    assert turn.tools_in_flight == ()
    assert turn.items[-1] == result
    assert isinstance(turn.items[1], ToolCall) and turn.items[1].status == "completed"
    assert isinstance(turn.items[-1], ToolResult)


def test_abort_with_discard_keeps_only_user_messages() -> None:
    b = _builder()
    b.start_turn("write it")
    b.assistant_text(["sure"])
    b.run_tool("write_file", {"path": "a"}, "ok")
    b.abort(discard=True)
    turn = replay(b.events).turns[0]
    assert [type(i).__name__ for i in turn.items] == ["UserMessage"]
    assert turn.discarded_items == 3 and turn.status == "aborted"


def test_events_after_a_turn_settles_change_nothing_and_are_counted() -> None:
    b = _builder()
    b.start_turn("hi")
    question = b.ask_user("sure?")
    turn_id = b.turn_id
    b.complete()
    before = replay(b.events)
    b.emit(ev.AssistantTextDelta, turn_id=turn_id, item_id="late", text="x")
    b.emit(ev.TurnFailed, turn_id=turn_id, code="x", message="y")
    b.emit(
        ev.UserInputResolved, turn_id=turn_id, request_id=question, status="answered", answer="yes"
    )
    after = replay(b.events)
    assert after.turns == before.turns
    assert after.late_events == 3
    item = after.turns[0].items[1]
    assert isinstance(item, UserInput) and item.status == "cancelled"


def test_usage_after_a_turn_settles_counts_for_the_thread_not_the_turn() -> None:
    b = _builder()
    turn_id = b.start_turn("hi")
    b.usage(prompt_tokens=10, cost_usd=0.5)
    b.complete()
    before = replay(b.events)
    b.emit(ev.Usage, turn_id=turn_id, usage=UsageSnapshot(prompt_tokens=7, cost_usd=0.25))
    after = replay(b.events)
    assert after.turns == before.turns, "a settled turn is final (SPEC 4, rule 4)"
    assert after.late_events == before.late_events + 1
    assert after.usage.prompt_tokens == 17 and after.usage.calls == 2


def test_a_second_answer_to_an_approval_is_a_late_event() -> None:
    b = _builder()
    b.start_turn("go")
    approval = b.request_approval(b.tool_call("bash", {}), "rm")
    b.resolve_approval(approval, "denied")
    b.resolve_approval(approval, "approved")
    state = replay(b.events)
    assert state.turns[0].items[2].status == "denied"
    assert state.late_events == 1


def test_rewind_hides_turns_and_undo_restores_them() -> None:
    b = _builder()
    first = b.start_turn("one")
    b.complete()
    second = b.start_turn("two")
    b.complete()
    rewind_seq = b.rewind(second)
    third = b.start_turn("three")
    b.complete()
    state = replay(b.events)
    assert [t.turn_id for t in state.visible_turns] == [first, third]
    assert state.rewinds[0].hidden_turn_ids == (second,)
    b.undo_rewind(rewind_seq)
    state = replay(b.events)
    assert [t.turn_id for t in state.visible_turns] == [first, second, third]
    assert state.rewinds[0].undone_at_seq == rewind_seq + 4


def test_fork_copies_history_and_aborts_the_turn_open_at_the_fork_point() -> None:
    b = _builder()
    b.start_turn("one")
    b.complete()
    b.start_turn("two")
    b.assistant_text(["thinking"], complete=False)
    fork_at = b.seq
    b.complete()
    forked = fork_events(b.events, "t_fork", fork_at, at=b.at + 1)
    state = replay(forked)
    assert state.thread_id == "t_fork"
    assert state.forked_from is not None and state.forked_from.thread_id == "t_ex"
    assert state.forked_from.seq == fork_at
    assert [t.status for t in state.turns] == ["completed", "aborted"]
    assert state.turns[1].abort_reason == "forked"
    assert replay(b.events).turns[1].status == "completed"


def test_thread_updated_changes_only_the_named_settings() -> None:
    b = _builder()
    goal = Goal(objective="ship it", token_budget=100_000)
    b.update(title="renamed", goal=goal, todos=(Todo(content="a", status="in_progress"),))
    settings = replay(b.events).settings
    assert (settings.title, settings.workspace, settings.goal) == ("renamed", "/w", goal)
    b.update(goal=None)
    assert replay(b.events).settings.goal is None
    assert replay(b.events).settings.title == "renamed"


def test_usage_outside_a_turn_counts_for_the_thread_only() -> None:
    b = _builder()
    b.usage(in_turn=False, prompt_tokens=10, cost_usd=0.5)
    b.start_turn("x")
    b.usage(prompt_tokens=5, completion_tokens=2, cost_usd=None)
    state = replay(b.events)
    assert state.usage.calls == 2 and state.usage.prompt_tokens == 15
    assert state.usage.cost_usd == 0.5 and state.usage.unpriced_calls == 1
    assert state.turns[0].usage.prompt_tokens == 5


def test_warnings_land_in_the_open_turn_or_on_the_thread() -> None:
    b = _builder()
    b.warning("title_failed", "no title", in_turn=False)
    b.start_turn("x")
    b.warning("output_truncated", "raise max tokens")
    state = replay(b.events)
    assert [w.code for w in state.warnings] == ["title_failed"]
    assert type(state.turns[0].items[-1]).__name__ == "WarningItem"


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda b: b.emit(ev.TurnCompleted, turn_id="nope"), "never started"),
        (lambda b: b.emit(ev.TurnCompleted), "has no turn_id"),
        (lambda b: b.emit(ev.TurnStarted, turn_id=b.events[1].turn_id), "started twice"),
        (lambda b: b.rewind("nope"), "unknown turn"),
        (lambda b: b.undo_rewind(999), "no rewind"),
        (lambda b: b.emit(ev.ThreadCreated), "after the thread was created"),
        (
            lambda b: b.emit(
                ev.AssistantReasoningDelta, turn_id=b.turn_id, item_id=b.events[2].item.id, text="x"
            ),
            "of type user_message",
        ),
    ],
)
def test_structural_errors_name_the_event(make: object, message: str) -> None:
    b = _builder()
    b.start_turn("x")
    before = replay(b.events)
    make(b)  # type: ignore[operator]
    with pytest.raises(ProjectionError, match=message):
        reduce(before, b.events[-1])


def test_an_event_of_another_thread_is_refused_and_changes_nothing() -> None:
    b = _builder()
    projector = Projector()
    projector.apply_all(b.events)
    before = projector.snapshot()
    stray = ev.TurnStarted(seq=9, at=0, thread_id="t_other", turn_id="u")
    with pytest.raises(ProjectionError, match="t_other"):
        projector.apply(stray)
    assert projector.snapshot() == before


def test_snapshots_are_immutable_and_independent_of_later_events() -> None:
    b = _builder()
    b.start_turn("x")
    projector = Projector()
    projector.apply_all(b.events)
    first = projector.snapshot()
    projector.apply(b.emit(ev.AssistantTextDelta, turn_id=b.turn_id, item_id="t", text="a"))
    assert len(first.turns[0].items) == 1
    with pytest.raises(AttributeError):
        first.last_seq = 0  # type: ignore[misc]
    assert msgspec.json.encode(first) != msgspec.json.encode(projector.snapshot())


def test_a_refused_event_leaves_last_seq_at_the_event_before_it() -> None:
    """The log reader turns a fold's refusal into the line of the event: it
    needs the seq the fold had reached."""
    b = _builder()
    b.start_turn("x")
    stray = ev.TurnCompleted(seq=len(b.events) + 1, at=0, thread_id=b.thread_id, turn_id="nope")
    projector = Projector()
    with pytest.raises(ProjectionError):
        projector.apply_all([*b.events, stray])
    assert projector.last_seq == len(b.events)
