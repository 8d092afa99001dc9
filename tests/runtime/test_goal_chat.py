"""``/goal`` in the interactive session: the user sets, shows, pauses,
resumes, finishes, budgets and clears the thread's goal; a mistake is one
line and the session goes on."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import pytest

from kun.app.interface import Kun
from kun.app.requests import CreateThread
from kun.chat.commands import run_command
from kun.domain.state import ThreadState
from tests.app.support import local

pytestmark = pytest.mark.anyio


@dataclass
class _Model:
    provider: str = "scripted"
    model: str = "scripted-1"


@dataclass
class FakeSession:
    """The parts of a ChatSession that the commands use."""

    kun: Kun
    workspace: Path
    thread_id: str | None = None
    state: ThreadState | None = None
    turn_id: str | None = None
    approval: str = "on-request"
    model: _Model = field(default_factory=_Model)
    lines: list[tuple[str, str]] = field(default_factory=list)

    def say(self, text: str, tone: str = "plain") -> None:
        self.lines.append((text, tone))

    def switch_thread(self, thread_id: str | None) -> None:
        self.thread_id = thread_id

    async def thread(self) -> str:
        if self.thread_id is None:
            created = await self.kun.create_thread(CreateThread(workspace=str(self.workspace)))
            self.thread_id = created.thread_id
        return self.thread_id

    async def refresh(self) -> ThreadState:
        assert self.thread_id is not None
        self.state = await self.kun.thread(self.thread_id)
        return self.state

    def last(self) -> str:
        return self.lines[-1][0]


async def _goal(session: FakeSession, rest: str = "") -> str:
    await run_command(session, f"/goal {rest}".rstrip())  # type: ignore[arg-type]
    return session.last()


async def _state(session: FakeSession) -> Any:
    return (await session.refresh()).settings.goal


async def test_goal_set_show_pause_resume_done_clear(tmp_path: Path) -> None:
    async with local(tmp_path) as h:
        s = FakeSession(h.kun, h.workspace)
        assert await _goal(s) == "no goal (set one: /goal TEXT)"
        assert "next message starts work" in await _goal(s, "Make every test pass")
        assert s.thread_id is not None, "a goal before the first message creates the thread"
        assert (await _state(s)).objective == "Make every test pass" and (
            await _state(s)
        ).status == "active"
        assert await _goal(s, "budget 2,000,000") == "token budget 2,000,000"
        shown = await _goal(s)
        assert "Objective: Make every test pass\nStatus: active\nTime used: 0s" in shown
        assert "Tokens used: 0; token budget 2,000,000 (2,000,000 left)" in shown
        await _goal(s, "pause")
        assert (await _state(s)).status == "paused"
        await _goal(s, "resume")
        assert (await _state(s)).status == "active"
        await _goal(s, "done")
        assert (await _state(s)).status == "complete"
        assert await _goal(s, "clear") == "goal cleared"
        assert (await _state(s)) is None


async def test_goal_mistakes_are_one_line(tmp_path: Path) -> None:
    async with local(tmp_path) as h:
        s = FakeSession(h.kun, h.workspace, thread_id=await h.new_thread())
        for rest in ("pause", "clear", "budget 5"):
            await _goal(s, rest)
            assert s.lines[-1][1] == "error" and s.last().startswith("no goal to ")
        await _goal(s, "Ship it")
        await _goal(s, "resume")
        assert s.lines[-1] == ("the goal is active; /goal resume needs it paused", "error")
        await _goal(s, "budget lots")
        assert s.lines[-1][1] == "error" and "number of tokens" in s.last()


async def test_a_new_goal_replaces_the_old_one_with_fresh_numbers(tmp_path: Path) -> None:
    async with local(tmp_path) as h:
        s = FakeSession(h.kun, h.workspace, thread_id=await h.new_thread())
        await _goal(s, "First")
        await h.kun.service.update_thread(
            await s.thread(), goal=msgspec.structs.replace(await _state(s), time_used_ms=5_000)
        )
        assert "replaces 'First'" in await _goal(s, "Second")
        assert ((await _state(s)).objective, (await _state(s)).time_used_ms) == ("Second", 0)
