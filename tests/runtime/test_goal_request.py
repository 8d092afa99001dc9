"""A goal in the loop (SPEC §7.1): the continuation note rides after the
history of every request while the goal is active, and the goal and todo
tools run without approval under a policy that would ask for them."""

from __future__ import annotations

from pathlib import Path

import pytest

from kun.contracts import events as ev
from kun.contracts.items import Approval, ToolResult
from kun.contracts.threads import Goal
from kun.domain.reduce import replay
from kun.model.scripted import text_reply, tool_reply
from kun.store.jsonl import JsonlEventStore
from tests.runtime.support import harness

pytestmark = pytest.mark.anyio

GOAL = Goal(objective="Make the tests pass", token_budget=50_000, created_at=1)


async def test_the_goal_note_follows_the_history_while_the_goal_is_active(
    tmp_path: Path,
) -> None:
    script = [
        tool_reply("get_goal", call_id="c1"),
        tool_reply("update_goal", {"status": "complete"}, call_id="c2"),
        text_reply("done"),
    ]
    async with harness(tmp_path, script, policy="untrusted") as h:
        await h.service.update_thread(h.thread_id, goal=GOAL)
        turn = await h.run("work on the goal")
        requests = h.model.requests
        goal = h.state().settings.goal
    first, second, third = requests
    for request in (first, second):
        notes = request.context_instructions or ""
        assert "<thread_goal>" in notes and "Objective: Make the tests pass" in notes
        assert "Token budget: 50000 tokens in total." in notes
        assert "3 goal turns" in notes and "Weak, indirect or missing evidence" in notes
        assert "<thread_goal>" not in (request.system_prompt or "")
        assert "<thread_goal>" not in (request.project_context or "")
    assert first.context_instructions == second.context_instructions
    assert second.history[: len(first.history)] == first.history
    assert "<thread_goal>" not in (third.context_instructions or "")
    assert not [i for i in turn.items if isinstance(i, Approval)]
    results = [i for i in turn.items if isinstance(i, ToolResult)]
    assert [r.is_error for r in results] == [False, False]
    assert goal is not None and goal.status == "complete"


async def test_goal_changes_are_thread_updated_events_and_replay(tmp_path: Path) -> None:
    script = [
        tool_reply("create_goal", {"objective": "Ship", "token_budget": 10}, call_id="c1"),
        tool_reply("update_goal", {"status": "blocked"}, call_id="c2"),
        text_reply("blocked"),
    ]
    async with harness(tmp_path, script) as h:
        await h.run("set a goal")
        live = h.state().settings.goal
    events = list(JsonlEventStore(tmp_path / "home").read(h.thread_id))
    goals = [e.goal for e in events if isinstance(e, ev.ThreadUpdated)]
    assert [g.status for g in goals if isinstance(g, Goal)] == ["active", "blocked"]
    assert live is not None and live.objective == "Ship" and live.status == "blocked"
    assert replay(events).settings.goal == live
