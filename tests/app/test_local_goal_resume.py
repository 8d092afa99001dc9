"""``Kun.goal_resume`` in process: what settling a turn scheduled for the
thread's goal (nothing, a resume waiting on its timer, the turn it started),
which is what ``kun run --goal`` waits on between turns."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from kun.contracts import events as ev
from kun.model.scripted import text_reply
from kun.runtime import resume
from tests.app.support import WAIT_SECONDS, local

pytestmark = pytest.mark.anyio


async def test_a_turn_under_an_active_goal_schedules_a_resume_then_starts_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fire = anyio.Event()
    waited: list[float] = []

    async def sleep(seconds: float) -> None:
        waited.append(seconds)
        await fire.wait()

    monkeypatch.setattr(resume, "clock_sleep", sleep)
    async with local(tmp_path, [text_reply("working on it")] * 12) as t:
        thread = await t.new_thread()
        first = await t.run(thread, "no goal yet")
        assert (await t.kun.goal_resume(thread, first.turn_id)).state == "none"
        await t.kun.set_goal(thread, "ship it")
        second = await t.run(thread, "start")
        pending = await t.kun.goal_resume(thread[:12], second.turn_id)
        assert pending.state == "waiting" and pending.turn_id is None
        assert pending.attempt == 1 and pending.max_attempts and pending.delay_seconds == waited[0]
        last = (await t.kun.thread(thread)).last_seq
        async with t.kun.follow(thread, after=last) as feed:
            fire.set()
            with anyio.fail_after(WAIT_SECONDS):
                started = await anext(e async for e in feed if isinstance(e, ev.TurnStarted))
                assert started.turn_id is not None
                resumed = await t.kun.wait_turn(thread, started.turn_id)
        assert resumed.status == "completed", resumed.error
