"""Item-level history repair: what of a thread's items a model is shown."""

from __future__ import annotations

from typing import Any

import msgspec

from kun.contracts.items import (
    Approval,
    AssistantReasoning,
    AssistantText,
    Compaction,
    ErrorItem,
    Item,
    Plan,
    ToolCall,
    ToolResult,
    UserInput,
    UserMessage,
    WarningItem,
)
from kun.domain.history import HistoryRepair, ModelEntry, UserEntry, repair_history


def call(call_id: str, **fields: Any) -> ToolCall:
    return ToolCall(id=f"tc-{call_id}", call_id=call_id, arguments=msgspec.Raw(b"{}"), **fields)


def result(call_id: str, output: str = "ok", **fields: Any) -> ToolResult:
    return ToolResult(id=f"res-{call_id}-{output}", call_id=call_id, output=output, **fields)


def user(text: str, **fields: Any) -> UserMessage:
    return UserMessage(id=f"u-{text}", text=text, **fields)


def say(text: str, **fields: Any) -> AssistantText:
    return AssistantText(id=f"a-{text}", text=text, **fields)


def shape(items: list[Item]) -> list[object]:
    """Entries as plain tuples: ("user", text) or ("model", output ids, result ids)."""
    out: list[object] = []
    for entry in repair_history(items):
        if isinstance(entry, UserEntry):
            item = entry.item
            out.append(("user", item.text if isinstance(item, UserMessage) else item.summary))
        else:
            out.append(("model", [i.id for i in entry.output], [r.call_id for r in entry.results]))
    return out


def test_a_complete_block_keeps_its_results_in_call_order() -> None:
    items: list[Item] = [user("go"), say("x"), call("c1"), call("c2"), result("c2"), result("c1")]
    assert shape(items) == [("user", "go"), ("model", ["a-x", "tc-c1", "tc-c2"], ["c1", "c2"])]


def test_a_block_with_a_missing_result_is_dropped_but_the_text_stays() -> None:
    items: list[Item] = [user("go"), say("x"), call("c1"), call("c2"), result("c1"), user("next")]
    assert shape(items) == [("user", "go"), ("model", ["a-x"], []), ("user", "next")]


def test_a_block_without_text_is_dropped_whole() -> None:
    items: list[Item] = [user("go"), call("c1"), user("next")]
    assert shape(items) == [("user", "go"), ("user", "next")]


def test_orphan_and_duplicate_results_are_dropped() -> None:
    items: list[Item] = [
        user("go"),
        result("lost"),
        call("c1"),
        result("c1", "first"),
        result("c1", "second"),
        say("done"),
    ]
    entries = repair_history(items)
    assert shape(items) == [
        ("user", "go"),
        ("model", ["tc-c1"], ["c1"]),
        ("model", ["a-done"], []),
    ]
    step = entries[1]
    assert isinstance(step, ModelEntry)
    assert step.results[0].output == "first"


def test_a_result_after_the_next_step_is_an_orphan() -> None:
    items: list[Item] = [
        user("go"),
        call("c1"),
        call("c2"),
        result("c2"),
        say("moving on"),
        result("c1"),
    ]
    assert shape(items) == [("user", "go"), ("model", ["a-moving on"], [])]


def test_output_before_any_result_belongs_to_the_same_step() -> None:
    items: list[Item] = [user("go"), call("c1"), say("then this"), result("c1")]
    assert shape(items) == [("user", "go"), ("model", ["tc-c1", "a-then this"], ["c1"])]


def test_a_user_message_between_call_and_result_moves_after_the_result() -> None:
    items: list[Item] = [user("go"), call("c1"), user("steer", steered=True), result("c1")]
    assert shape(items) == [("user", "go"), ("model", ["tc-c1"], ["c1"]), ("user", "steer")]


def test_gui_only_items_are_dropped_even_between_a_call_and_its_result() -> None:
    items: list[Item] = [
        user("go"),
        call("c1"),
        Approval(id="ap", call_id="c1", status="approved"),
        UserInput(id="q", question="?", status="answered", answer="yes"),
        Plan(id="p", markdown="# plan"),
        WarningItem(id="w", code="w", message="careful"),
        result("c1"),
        ErrorItem(id="e", code="boom", message="boom"),
    ]
    assert shape(items) == [("user", "go"), ("model", ["tc-c1"], ["c1"])]


def test_duplicate_call_ids_in_one_block_drop_the_block() -> None:
    items: list[Item] = [user("go"), say("x"), call("c1"), call("c1"), result("c1")]
    assert shape(items) == [("user", "go"), ("model", ["a-x"], [])]


def test_open_or_idless_calls_cannot_be_answered() -> None:
    items: list[Item] = [user("go"), say("x"), call("c1", status="in_progress"), result("c1")]
    assert shape(items) == [("user", "go"), ("model", ["a-x"], [])]
    idless: list[Item] = [user("go"), say("x"), call(""), result("")]
    assert shape(idless) == [("user", "go"), ("model", ["a-x"], [])]


def test_failed_calls_with_a_result_are_sent() -> None:
    items: list[Item] = [user("go"), call("c1", status="failed"), result("c1", is_error=True)]
    assert shape(items) == [("user", "go"), ("model", ["tc-c1"], ["c1"])]


def test_statuses_decide_what_text_is_sent() -> None:
    items: list[Item] = [
        user("go"),
        say("done", status="completed"),
        say("stopped half", status="aborted"),
        say("broken", status="failed"),
        say("streaming", status="in_progress"),
        say("   "),
    ]
    assert shape(items) == [("user", "go"), ("model", ["a-done", "a-stopped half"], [])]


def test_reasoning_alone_is_not_a_step() -> None:
    thought = AssistantReasoning(id="r", text="hmm")
    unfinished = AssistantReasoning(id="r2", text="hm", status="aborted")
    assert shape([user("go"), thought, user("again")]) == [("user", "go"), ("user", "again")]
    assert shape([user("go"), thought, unfinished, say("x")]) == [
        ("user", "go"),
        ("model", ["r", "a-x"], []),
    ]


def test_compaction_and_blank_user_messages() -> None:
    items: list[Item] = [
        Compaction(id="c", summary="Earlier: we read app.py."),
        Compaction(id="c2", summary="half", status="in_progress"),
        user("   "),
        user("go"),
    ]
    assert shape(items) == [("user", "Earlier: we read app.py."), ("user", "go")]


def test_the_fold_settles_a_prefix_that_never_changes() -> None:
    items: list[Item] = [
        user("go"),
        say("x"),
        call("c1"),
        result("c1"),
        call("c2"),
        result("c2"),
        say("done"),
        user("more"),
    ]
    repair = HistoryRepair()
    before: list[object] = []
    for n, item in enumerate(items, 1):
        repair.feed(item)
        settled = list(repair.settled)
        assert settled[: len(before)] == before
        assert repair.entries() == repair_history(items[:n])
        before = settled
