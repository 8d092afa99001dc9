"""Goals through the in-process adapter: set (replacing any), the user's
moves as ``/goal`` allows them, the budget, clear; a refused move says
why in the session's words."""

from __future__ import annotations

from pathlib import Path

import pytest

from kun.app.local_errors import GoalRefused, NoGoal
from tests.app.support import local

pytestmark = pytest.mark.anyio


async def test_a_goal_set_paused_resumed_budgeted_done_and_cleared(tmp_path: Path) -> None:
    async with local(tmp_path) as t:
        thread = await t.new_thread()
        with pytest.raises(NoGoal, match=r"^no goal to pause \(set one: /goal TEXT\)$"):
            await t.kun.change_goal(thread, status="paused")
        with pytest.raises(NoGoal, match=r"^no goal to clear$"):
            await t.kun.change_goal(thread, clear=True)
        set_ = await t.kun.set_goal(thread[:12], "ship it", token_budget=1000)
        assert set_.goal is not None and set_.goal.token_budget == 1000
        assert (await t.kun.thread(thread)).settings.goal == set_.goal
        paused = await t.kun.change_goal(thread, status="paused")
        assert paused.goal is not None and paused.goal.status == "paused"
        with pytest.raises(GoalRefused, match=r"^the goal is paused; /goal pause needs it active$"):
            await t.kun.change_goal(thread, status="paused")
        resumed = await t.kun.change_goal(thread, status="active", clear_budget=True)
        assert resumed.goal is not None and resumed.goal.token_budget is None
        assert resumed.goal.status == "active"
        done = await t.kun.change_goal(thread, status="complete")
        assert done.goal is not None and done.goal.status == "complete"
        with pytest.raises(GoalRefused, match=r"^the goal is complete; /goal resume needs it"):
            await t.kun.change_goal(thread, status="active")
        cleared = await t.kun.change_goal(thread, clear=True)
        assert cleared.goal is None and (await t.kun.thread(thread)).settings.goal is None
