"""Cross-turn goal resume wired into the TurnService (SPEC §7.4), on a fake
clock: the timers' delays are read, never waited for."""

from __future__ import annotations

import logging
import shutil
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import click
import msgspec
import pytest

from kun.cli.run_goal import goal_line
from kun.contracts import events as ev
from kun.contracts.items import UserMessage
from kun.contracts.threads import Goal, ThreadSettings
from kun.domain.resume_policy import (
    BLOCKED_CODE,
    RUNAWAY_BLOCK_CODE,
    WORKSPACE_MISSING_CODE,
    ResumeSettings,
)
from kun.model.scripted import ScriptedModelClient, text_reply, tool_reply
from kun.runtime.context import TurnLimits, draft
from kun.runtime.reconcile import reconcile_orphaned_turns
from kun.runtime.recorder import EventRecorder
from kun.runtime.service import TurnService
from kun.store.jsonl import JsonlEventStore
from kun.tools.host import default_host as builtin_host
from tests.runtime.support import SlowTool, host_with

pytestmark = pytest.mark.anyio

GOAL = Goal(objective="make a.py print A", created_at=1)
READ = tool_reply("read_file", {"path": "a.py"})


@dataclass
class FakeClock:
    """``sleep`` parks until :meth:`tick` releases the oldest sleeper."""

    delays: list[float] = field(default_factory=list)
    _sleepers: list[anyio.Event] = field(default_factory=list)
    _arrived: anyio.Event = field(default_factory=anyio.Event)
    cancelled: int = 0

    async def sleep(self, seconds: float) -> None:
        self.delays.append(seconds)
        wake = anyio.Event()
        self._sleepers.append(wake)
        self._arrived.set()
        try:
            await wake.wait()
        except anyio.get_cancelled_exc_class():
            self.cancelled += 1
            raise

    async def tick(self) -> None:
        await self.asleep()
        self._sleepers.pop(0).set()

    async def asleep(self) -> None:
        """Until some timer sleeps on this clock."""
        while not self._sleepers:
            self._arrived = anyio.Event()
            await self._arrived.wait()


@dataclass
class Rig:
    service: TurnService
    clock: FakeClock
    thread_id: str

    async def run(self, text: str, **kwargs: Any) -> str:
        turn_id = await self.service.start_turn(self.thread_id, text, **kwargs)
        with anyio.fail_after(10):
            await self.service.wait_turn(self.thread_id, turn_id)
        return turn_id

    async def resume(self) -> str | None:
        """Let the pending timer fire; the turn it started, run to its end."""
        with anyio.fail_after(10):
            waiting = self.service.resumes.pending(self.thread_id)
            assert waiting is not None
            last = self.service.state(self.thread_id).turns[-1].turn_id
            await self.clock.tick()
            turn_id = await self.service.resumes.next_turn(self.thread_id, last)
            if turn_id is not None:
                await self.service.wait_turn(self.thread_id, turn_id)
            return turn_id

    def delay(self) -> float | None:
        pending = self.service.resumes.pending(self.thread_id)
        return None if pending is None else pending.plan.delay_seconds


@asynccontextmanager
async def rig(
    tmp_path: Path,
    script: Iterable[Any],
    *,
    goal: Goal | None = GOAL,
    settings: ResumeSettings | None = None,
    tools: Any = None,
) -> AsyncIterator[Rig]:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    (workspace / "a.py").write_text("print('a')\n")
    clock = FakeClock()
    store = JsonlEventStore(tmp_path / "home")
    async with store, EventRecorder(store) as recorder, anyio.create_task_group() as tg:
        service = TurnService(
            recorder,
            tg,
            model=ScriptedModelClient(script if callable(script) else list(script)),
            tools=tools or builtin_host(),
            resume=settings,
            sleep=clock.sleep,
        )
        thread_id = await service.create_thread(ThreadSettings(workspace=str(workspace), goal=goal))
        try:
            yield Rig(service, clock, thread_id)
        finally:
            tg.cancel_scope.cancel()


def _replies(n: int) -> list[list[Any]]:
    """Short distinct replies (under the repetition detector's 12 characters)."""
    return [text_reply(f"ok {i}") for i in range(n)]


async def test_backoff_doubles_then_the_goal_is_blocked(tmp_path: Path) -> None:
    async with rig(tmp_path, _replies(6)) as r:
        await r.run("work on the goal")
        delays = []
        attempts = []
        for _ in range(5):
            delays.append(r.delay())
            turn_id = await r.resume()
            assert turn_id is not None
            turn = next(t for t in r.service.state(r.thread_id).turns if t.turn_id == turn_id)
            message = next(i for i in turn.items if isinstance(i, UserMessage))
            attempts.append(message.goal_resume)
        assert delays == [2, 4, 8, 16, 32]
        assert attempts == [1, 2, 3, 4, 5]
        assert r.clock.delays == [2, 4, 8, 16, 32]
        state = r.service.state(r.thread_id)
        assert r.service.resumes.pending(r.thread_id) is None
        assert state.settings.goal is not None and state.settings.goal.status == "blocked"
        assert [w.code for w in state.warnings] == [BLOCKED_CODE]
        assert "5 resumed turns" in state.warnings[0].message


async def test_a_resume_without_its_workspace_blocks_the_goal_saying_how_to_rebind(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The workspace went away between turns (a deleted checkout; an
    imported thread): the timer's turn is refused, and instead of a logged
    traceback and a goal left active with nothing running, the goal is
    blocked with a warning naming the folder and how to give it another."""
    async with rig(tmp_path, _replies(2)) as r:
        await r.run("work on the goal")
        workspace = tmp_path / "ws"
        shutil.rmtree(workspace)
        with caplog.at_level(logging.ERROR, logger="kun.runtime.resume"):
            assert await r.resume() is None
        assert caplog.records == []
        state = r.service.state(r.thread_id)
        assert len(state.turns) == 1
        assert r.service.resumes.pending(r.thread_id) is None
        assert state.settings.goal is not None and state.settings.goal.status == "blocked"
        assert [w.code for w in state.warnings] == [WORKSPACE_MISSING_CODE]
        message = state.warnings[0].message
        assert str(workspace) in message
        assert f"kun resume {r.thread_id} --workspace DIR" in message
        assert message.startswith("goal blocked: ")
        assert goal_line(r.service.state(r.thread_id)) == message
        elsewhere = tmp_path / "elsewhere"
        with click.Context(click.Command("run")) as ctx:
            ctx.params["home"] = elsewhere
            shown = goal_line(r.service.state(r.thread_id))
        assert f"kun resume {r.thread_id} --workspace DIR --home {elsewhere} gives" in shown


async def test_the_cap_holds_past_60_seconds(tmp_path: Path) -> None:
    settings = ResumeSettings(max_attempts=8)
    async with rig(tmp_path, _replies(8), settings=settings) as r:
        await r.run("work on the goal")
        for _ in range(7):
            await r.resume()
        assert r.clock.delays == [2, 4, 8, 16, 32, 60, 60, 60]


async def test_progress_resets_the_attempts(tmp_path: Path) -> None:
    script = [text_reply("ok 0"), text_reply("ok 1"), READ, text_reply("read it"), text_reply("x")]
    async with rig(tmp_path, script) as r:
        await r.run("work on the goal")
        await r.resume()  # no progress: the next waits 4 s
        assert r.delay() == 4
        await r.resume()  # reads a file: progress
        assert r.delay() == 2
        assert r.clock.delays == [2, 4, 2]


async def test_a_goal_changed_before_the_timer_fires_is_dropped(tmp_path: Path) -> None:
    async with rig(tmp_path, _replies(2)) as r:
        await r.run("work on the goal")
        assert r.delay() == 2
        other = Goal(objective="something else", created_at=2)
        await r.service.update_thread(r.thread_id, goal=other)
        assert await r.resume() is None
        assert len(r.service.state(r.thread_id).turns) == 1


async def test_a_paused_goal_is_not_resumed_when_the_timer_fires(tmp_path: Path) -> None:
    async with rig(tmp_path, _replies(2)) as r:
        await r.run("work on the goal")
        await r.service.update_thread(
            r.thread_id, goal=msgspec.structs.replace(GOAL, status="paused")
        )
        assert await r.resume() is None
        assert len(r.service.state(r.thread_id).turns) == 1


async def test_a_turn_without_an_active_goal_schedules_nothing(tmp_path: Path) -> None:
    async with rig(tmp_path, _replies(1), goal=None) as r:
        turn_id = await r.run("hello")
        assert r.service.resumes.pending(r.thread_id) is None
        assert await r.service.resumes.next_turn(r.thread_id, turn_id) is None


async def test_an_interrupted_turn_is_not_resumed(tmp_path: Path) -> None:
    started = anyio.Event()
    slow = SlowTool(started=started)
    async with rig(tmp_path, [tool_reply("slow")], tools=host_with(slow)) as r:
        turn_id = await r.service.start_turn(r.thread_id, "work on the goal")
        with anyio.fail_after(10):
            await started.wait()
            await r.service.interrupt_turn(r.thread_id, turn_id)
        assert r.service.resumes.pending(r.thread_id) is None
        assert r.clock.delays == []


async def test_a_user_turn_drops_the_pending_resume(tmp_path: Path) -> None:
    async with rig(tmp_path, _replies(2)) as r:
        await r.run("work on the goal")
        pending = r.service.resumes.pending(r.thread_id)
        assert pending is not None
        await r.run("actually, do this first")
        assert pending.settled.is_set() and pending.turn_id is None
        assert r.clock.cancelled == 1
        assert r.delay() == 2  # the user's turn schedules its own


async def test_a_resumed_turn_inherits_disable_user_input(tmp_path: Path) -> None:
    async with rig(tmp_path, _replies(2)) as r:
        await r.run("work on the goal", disable_user_input=True)
        turn_id = await r.resume()
        turn = next(t for t in r.service.state(r.thread_id).turns if t.turn_id == turn_id)
        assert turn.disable_user_input


async def test_closing_cancels_pending_timers_so_the_task_group_can_end(
    tmp_path: Path,
) -> None:
    """The task group is left to end by itself: a timer still asleep on the
    (never released) fake clock would keep it open forever."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    clock = FakeClock()
    store = JsonlEventStore(tmp_path / "home")
    with anyio.fail_after(10):
        async with store, EventRecorder(store) as recorder:
            async with anyio.create_task_group() as tg:
                service = TurnService(
                    recorder,
                    tg,
                    model=ScriptedModelClient([text_reply("ok")]),
                    tools=builtin_host(),
                    sleep=clock.sleep,
                )
                thread_id = await service.create_thread(
                    ThreadSettings(workspace=str(workspace), goal=GOAL)
                )
                turn_id = await service.start_turn(thread_id, "work on the goal")
                await service.wait_turn(thread_id, turn_id)
                pending = service.resumes.pending(thread_id)
                assert pending is not None
                await clock.asleep()
                service.resumes.close()
                assert await service.resumes.next_turn(thread_id, turn_id) is None
    assert clock.cancelled == 1
    assert pending is not None and pending.turn_id is None


async def _leave_open_turn(home: Path, workspace: Path, goal: Goal | None) -> str:
    """A thread whose process died mid-turn: its turn is still open."""
    store = JsonlEventStore(home)
    async with store, EventRecorder(store) as recorder, anyio.create_task_group() as tg:
        service = TurnService(recorder, tg)
        thread_id = await service.create_thread(ThreadSettings(workspace=str(workspace), goal=goal))
        await service.write(
            thread_id,
            draft(ev.TurnStarted, "turn_1", disable_user_input=True),
            draft(ev.ItemCompleted, "turn_1", item=UserMessage(id="m1", text="go")),
        )
    return thread_id


async def test_after_a_restart_only_reconciled_threads_with_an_active_goal_resume(
    tmp_path: Path,
) -> None:
    home, workspace = tmp_path / "home", tmp_path / "ws"
    workspace.mkdir()
    orphaned = await _leave_open_turn(home, workspace, GOAL)
    no_goal = await _leave_open_turn(home, workspace, None)
    clock = FakeClock()
    store = JsonlEventStore(home)
    async with store, EventRecorder(store) as recorder, anyio.create_task_group() as tg:
        service = TurnService(
            recorder,
            tg,
            model=ScriptedModelClient([text_reply("back")]),
            tools=builtin_host(),
            sleep=clock.sleep,
        )
        idle = await service.create_thread(ThreadSettings(workspace=str(workspace), goal=GOAL))
        touched = await reconcile_orphaned_turns(service)
        assert sorted(touched) == sorted([orphaned, no_goal])
        assert service.resumes.pending(no_goal) is None
        assert service.resumes.pending(idle) is None
        pending = service.resumes.pending(orphaned)
        assert pending is not None and pending.plan.delay_seconds == 2
        with anyio.fail_after(10):
            await clock.tick()
            turn_id = await service.resumes.next_turn(orphaned, "turn_1")
            assert turn_id is not None
            turn = await service.wait_turn(orphaned, turn_id)
        assert turn.status == "completed" and turn.disable_user_input
        tg.cancel_scope.cancel()


async def test_a_plan_mode_turn_is_not_resumed(tmp_path: Path) -> None:
    async with rig(tmp_path, _replies(1)) as r:
        await r.run("plan the work", plan_mode=True)
        assert r.service.resumes.pending(r.thread_id) is None
        assert r.clock.delays == []


async def test_server_shutdown_cancels_pending_resumes_first(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from kun.server.app import begin_shutdown

    async with rig(tmp_path, _replies(2)) as r:
        first = await r.run("work on the goal")
        pending = r.service.resumes.pending(r.thread_id)
        assert pending is not None
        await r.clock.asleep()
        backend = SimpleNamespace(service=r.service)
        app = SimpleNamespace(state=SimpleNamespace(shutdown=anyio.Event(), backend=backend))
        with anyio.fail_after(10):
            await begin_shutdown(app)
            assert await r.service.resumes.next_turn(r.thread_id, first) is None
        assert r.clock.cancelled == 1
        await r.run("one more")  # a turn settling now schedules nothing
        assert r.service.resumes.pending(r.thread_id) is None


async def test_a_model_repeating_one_successful_call_ends_the_goal_blocked(
    tmp_path: Path,
) -> None:
    """The reads succeed, so they looked like progress and the goal was
    resumed forever (73 turns in 150 s). A turn kun stopped as a runaway
    blocks the goal at once: no resume, a handful of model calls in all."""
    calls: list[object] = []

    def forever(request: object) -> list[Any]:
        calls.append(request)
        return READ

    async with rig(tmp_path, forever) as r:
        turn_id = await r.run("read a.py forever")
        state = r.service.state(r.thread_id)
        turn = next(t for t in state.turns if t.turn_id == turn_id)
        assert turn.error is not None and turn.error.code == "tool_storm_stopped"
        assert r.service.resumes.pending(r.thread_id) is None
        assert r.clock.delays == []
        assert state.settings.goal is not None and state.settings.goal.status == "blocked"
        assert [w.code for w in state.warnings] == [RUNAWAY_BLOCK_CODE]
        assert "tool_storm_stopped" in state.warnings[0].message
        assert goal_line(r.service.state(r.thread_id)) == state.warnings[0].message
        assert len(calls) <= 12


async def test_a_turn_stopped_by_its_step_limit_blocks_the_goal(tmp_path: Path) -> None:
    """Distinct successful calls (no storm) until ``max_steps``: resuming
    would spend another whole turn's limit each time."""
    script = [tool_reply("read_file", {"path": "a.py", "offset": n}) for n in range(3)]
    async with rig(tmp_path, script) as r:
        await r.run("read a.py", limits=TurnLimits(max_steps=3))
        state = r.service.state(r.thread_id)
        assert state.turns[-1].error is not None
        assert state.turns[-1].error.code == "turn_step_limit"
        assert r.service.resumes.pending(r.thread_id) is None
        assert state.settings.goal is not None and state.settings.goal.status == "blocked"
        assert [w.code for w in state.warnings] == [RUNAWAY_BLOCK_CODE]
        assert "turn_step_limit" in state.warnings[0].message
