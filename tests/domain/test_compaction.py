"""The history window of compaction (kun.domain.compaction): the latest
compaction that applies stands for what it covers, the cut never parts a
call from its result, and rewind and fork take compactions back with the
turns that held them."""

from __future__ import annotations

from typing import Any

import msgspec

from kun.contracts.items import (
    Approval,
    AssistantText,
    Compaction,
    Item,
    ToolCall,
    ToolResult,
    UserMessage,
)
from kun.domain.compaction import (
    COMPACTION_PROMPT,
    SUMMARY_PREFIX,
    CompactionPlan,
    compaction_item,
    estimate_request_tokens,
    history_window,
    plan_compaction,
    summary_request,
    visible_history,
)
from kun.domain.fork import fork_events
from kun.domain.history import UserEntry, repair_history
from kun.domain.reduce import replay
from kun.testing.logbuilder import LogBuilder


def user(n: int) -> UserMessage:
    return UserMessage(id=f"u{n}", text=f"question {n}")


def say(n: int) -> AssistantText:
    return AssistantText(id=f"a{n}", text=f"answer {n}")


def call(call_id: str, **fields: Any) -> ToolCall:
    return ToolCall(id=f"tc_{call_id}", call_id=call_id, name="read_file",
                    arguments=msgspec.Raw(b"{}"), **fields)  # fmt: skip


def result(call_id: str) -> ToolResult:
    return ToolResult(id=f"tr_{call_id}", call_id=call_id, name="read_file", output="ok")


def summary(item_id: str, covers_until: str | None, **fields: Any) -> Compaction:
    return Compaction(id=item_id, summary=f"summary {item_id}", covers_until=covers_until, **fields)


def ids(items: Any) -> list[str]:
    return [item.id for item in items]


def test_the_summary_stands_for_what_it_covers_and_the_rest_follows() -> None:
    items = [user(1), say(1), user(2), say(2), summary("c", "a1"), call("x"), result("x")]
    assert ids(history_window(items)) == ["c", "u2", "a2", "tc_x", "tr_x"]


def test_without_a_compaction_the_items_are_returned_as_they_are() -> None:
    items: list[Item] = [user(1), say(1), Compaction(id="old", summary="legacy summary")]
    assert history_window(items) is items


def test_the_latest_compaction_that_applies_wins() -> None:
    items = [user(1), say(1), summary("c1", "a1"), user(2), say(2), user(3), summary("c2", "a2")]
    assert ids(history_window(items)) == ["c2", "u3"]


def test_a_cut_between_a_call_and_its_result_does_not_apply() -> None:
    items = [user(1), say(1), user(2), call("x"), result("x"), user(3)]
    earlier = summary("c1", "a1")
    splitting = summary("c2", "tc_x")
    window = history_window([*items[:3], earlier, *items[3:], splitting])
    assert ids(window) == ["c1", "u2", "tc_x", "tr_x", "u3"]
    assert ids(history_window([*items, splitting])) == ids(items)


def test_a_cut_inside_a_step_of_parallel_calls_does_not_apply() -> None:
    items = [user(1), call("x"), call("y"), result("x"), result("y"), user(2)]
    for covers in ("tc_x", "tc_y", "tr_x"):
        assert ids(history_window([*items, summary("c", covers)])) == ids(items)
    assert ids(history_window([*items, summary("c", "tr_y")])) == ["c", "u2"]


def test_a_result_still_to_come_or_an_open_call_refuses_the_cut() -> None:
    steered = [user(1), call("x"), user(2), result("x"), summary("c", "u1")]
    assert "c" not in ids(history_window(steered))
    running = [user(1), call("x", status="in_progress"), Approval(id="ap"), user(2)]
    assert "c" not in ids(history_window([*running, summary("c", "ap")]))


def test_a_compaction_not_completed_or_naming_nothing_before_it_is_left_out() -> None:
    items = [user(1), say(1), user(2)]
    for bad in (
        summary("c", "a1", status="in_progress"),
        summary("c", "nowhere"),
        Compaction(id="c", summary="  ", covers_until="a1"),
    ):
        assert ids(history_window([*items, bad])) == ids(items)
    assert ids(history_window([user(1), summary("c", "later"), say(9)])) == ["u1", "a9"]


def _thread() -> tuple[LogBuilder, list[str]]:
    b = LogBuilder("t_c")
    b.create(workspace="/w", title="demo")
    turns = []
    for n in range(3):
        turns.append(b.start_turn(f"question {n}"))
        b.assistant_text([f"answer {n}"])
        b.complete()
    return b, turns


def _compact(b: LogBuilder) -> Compaction:
    plan = plan_compaction(replay(b.events).visible_turns)
    assert plan is not None
    item = compaction_item(b.next_id("cmp"), "what happened", plan)
    b.item(item)
    return item


def test_rewind_over_the_turn_holding_a_compaction_takes_it_back() -> None:
    b, _ = _thread()
    fourth = b.start_turn("question 3")
    first = _compact(b)
    b.assistant_text(["answer 3"])
    b.complete()
    b.start_turn("question 4")
    second = _compact(b)
    b.assistant_text(["answer 4"])
    b.complete()
    state = replay(b.events)
    assert visible_history(state.visible_turns)[0] == second
    b.rewind(state.visible_turns[-1].turn_id)
    state = replay(b.events)
    assert visible_history(state.visible_turns)[0] == first
    b.rewind(fourth)
    state = replay(b.events)
    window = visible_history(state.visible_turns)
    assert not any(isinstance(item, Compaction) for item in window)
    assert list(window) == [item for t in state.visible_turns for item in t.items]


def test_a_fork_before_a_compaction_does_not_see_it() -> None:
    b, _ = _thread()
    b.start_turn("question 3")
    fork_at = b.seq
    _compact(b)
    b.complete()
    forked = replay(fork_events(b.events, "t_f", fork_at, at=b.at + 1))
    assert not any(isinstance(i, Compaction) for i in visible_history(forked.visible_turns))
    assert isinstance(visible_history(replay(b.events).visible_turns)[0], Compaction)


def test_the_plan_keeps_the_open_turn_and_moves_past_the_applied_summary() -> None:
    b, _ = _thread()
    b.start_turn("question 3")
    state = replay(b.events)
    plan = plan_compaction(state.visible_turns)
    assert plan is not None
    last_settled = state.visible_turns[-2].items[-1]
    assert plan.covers_until == last_settled.id
    assert [i.id for i in plan.items] == [i.id for t in state.visible_turns[:-1] for i in t.items]
    assert plan.replaced_items == 6
    item = compaction_item("cmp_1", "  the gist\n", plan)
    assert item.summary == SUMMARY_PREFIX + "the gist" and item.replaced_items == 6
    b.item(item)
    assert plan_compaction(replay(b.events).visible_turns) is None, "nothing new to cover"
    b.assistant_text(["answer 3"])
    b.complete()
    b.start_turn("question 4")
    again = plan_compaction(replay(b.events).visible_turns)
    assert again is not None
    assert again.items[0] == item, "the new summary is written from the old one"
    assert [type(i).__name__ for i in again.items[1:]] == ["UserMessage", "AssistantText"]


def test_no_plan_for_a_thread_with_only_an_open_turn() -> None:
    b = LogBuilder("t_o")
    b.create(workspace="/w", title="demo")
    b.start_turn("hello")
    assert plan_compaction(replay(b.events).visible_turns) is None


def test_the_summary_request_has_no_tools_and_ends_with_the_prompt() -> None:
    items = (user(1), say(1), user(2), call("x"), result("x"), say(2))
    plan = CompactionPlan(covers_until="a2", items=items, replaced_items=6)
    request = summary_request(plan.items, system_prompt="You are kun.")
    assert request.tools == ()
    assert request.history[:-1] == items
    last = request.history[-1]
    assert isinstance(last, UserMessage) and last.text == COMPACTION_PROMPT
    entries = repair_history(request.history)
    assert len(entries) == 6, "the prompt is its own user turn after the history"
    assert entries[-1] == UserEntry(item=last)


def test_the_summary_request_leaves_out_the_oldest_items_to_fit() -> None:
    head = summary("c0", "z")
    big = [UserMessage(id=f"u{n}", text="x" * 4000) for n in range(10)]
    items = [head, *big, call("x"), result("x")]
    whole = estimate_request_tokens(summary_request(items))
    fitted = summary_request(items, budget_tokens=whole // 2)
    assert estimate_request_tokens(fitted) <= whole // 2
    assert fitted.history[0] == head, "the earlier summary is kept"
    kept = ids(fitted.history)
    assert kept[-3:] == ["tc_x", "tr_x", "compaction_prompt"]
    assert "u0" not in kept and "u9" in kept


def test_a_single_turn_too_big_to_summarise_keeps_its_latest_steps() -> None:
    steps: list[Item] = [UserMessage(id="u", text="go")]
    for n in range(20):
        steps += [
            call(f"x{n}"),
            ToolResult(id=f"tr_x{n}", call_id=f"x{n}", output="y" * 4000),
        ]
    whole = estimate_request_tokens(summary_request(steps))
    fitted = summary_request(steps, budget_tokens=whole // 3)
    assert estimate_request_tokens(fitted) <= whole // 3
    kept = fitted.history[:-1]
    assert kept and isinstance(kept[0], ToolCall), "no orphan result at the head"
    assert kept[-1].id == "tr_x19"
    assert len(repair_history(fitted.history)) == len(kept) // 2 + 1
