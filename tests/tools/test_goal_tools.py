"""The goal tools (SPEC §7.1): the model reads and creates a goal, and may
only report it complete or blocked — in the schema and again at run time."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from kun.contracts.threads import Goal
from kun.tools.base import ToolContext
from kun.tools.builtin.goal_tools import CreateGoal, GetGoal, UpdateGoal

pytestmark = pytest.mark.anyio

ACTIVE = Goal(objective="Ship the release", token_budget=5_000, created_at=1)


class Slot:
    """The thread's goal, as the host keeps it."""

    def __init__(self, goal: Goal | None) -> None:
        self.goal = goal
        self.writes: list[Goal | None] = []

    async def set(self, goal: Goal | None) -> None:
        self.goal = goal
        self.writes.append(goal)

    def context(self, tmp_path: Path) -> ToolContext:
        return ToolContext(
            workspace=tmp_path,
            thread_id="t",
            turn_id="u",
            call_id="c",
            get_goal=lambda: self.goal,
            set_goal=self.set,
        )


def test_update_goal_offers_only_complete_and_blocked() -> None:
    schema = msgspec.json.decode(UpdateGoal.spec.parameters)
    assert schema["properties"]["status"] == {"enum": ["complete", "blocked"]}
    assert schema["required"] == ["status"]


@pytest.mark.parametrize("status", ["paused", "active", "done", None])
async def test_update_goal_refuses_any_other_status_at_run_time(
    tmp_path: Path, status: str | None
) -> None:
    slot = Slot(ACTIVE)
    out = await UpdateGoal().run({"status": status}, slot.context(tmp_path))
    assert out.is_error and out.code == "invalid_goal_status"
    assert "only set status complete or blocked" in out.output
    assert slot.writes == []


@pytest.mark.parametrize("status", ["complete", "blocked"])
async def test_update_goal_records_complete_or_blocked(tmp_path: Path, status: str) -> None:
    slot = Slot(ACTIVE)
    out = await UpdateGoal().run({"status": status}, slot.context(tmp_path))
    assert not out.is_error
    assert slot.writes == [msgspec.structs.replace(ACTIVE, status=status)]
    assert f"Status: {status}" in out.output


async def test_update_goal_needs_an_active_goal(tmp_path: Path) -> None:
    for goal in (None, msgspec.structs.replace(ACTIVE, status="paused")):
        slot = Slot(goal)
        out = await UpdateGoal().run({"status": "complete"}, slot.context(tmp_path))
        assert out.is_error and out.code == "goal_not_active" and slot.writes == []


async def test_create_goal_refuses_while_one_is_active_or_paused(tmp_path: Path) -> None:
    for status in ("active", "paused"):
        slot = Slot(msgspec.structs.replace(ACTIVE, status=status))
        out = await CreateGoal().run({"objective": "Other"}, slot.context(tmp_path))
        assert out.is_error and out.code == "goal_exists" and slot.writes == []
        assert "update_goal" in out.output and "/goal clear" in out.output


async def test_create_goal_replaces_a_finished_goal(tmp_path: Path) -> None:
    slot = Slot(msgspec.structs.replace(ACTIVE, status="complete"))
    args = {"objective": "Next", "token_budget": 900}
    out = await CreateGoal().run(args, slot.context(tmp_path))
    assert not out.is_error
    assert slot.goal is not None
    assert (slot.goal.objective, slot.goal.status, slot.goal.token_budget) == (
        "Next",
        "active",
        900,
    )
    assert slot.goal.created_at > 0


async def test_get_goal_reports_numbers_and_a_spent_budget(tmp_path: Path) -> None:
    spent = msgspec.structs.replace(ACTIVE, tokens_used=6_000, time_used_ms=125_000)
    out = await GetGoal().run({}, Slot(spent).context(tmp_path))
    assert "Time used: 2m 05s" in out.output
    assert "Tokens used: 6,000; token budget 5,000 (exhausted)" in out.output
    none = await GetGoal().run({}, Slot(None).context(tmp_path))
    assert none.output == "This thread has no goal."
