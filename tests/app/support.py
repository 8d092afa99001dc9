"""An in-process adapter over a tmp home whose turns run on a scripted
model: the light layer opened by :func:`kun.app.local.open_home`, the
engine (over the same recorder) opened on the first call that needs it,
and counted, so a test can check that reads never open it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from kun.app.local import LocalKun, open_home
from kun.app.local_engine import Engine, engine_over
from kun.app.requests import CreateThread, StartTurn
from kun.domain.state import ThreadState, TurnState
from kun.model.scripted import Responder, ScriptedModelClient
from kun.runtime.recorder import EventRecorder
from kun.tools.host import ToolHost

WAIT_SECONDS = 10.0


@dataclass
class Local:
    kun: LocalKun
    model: ScriptedModelClient
    home: Path
    workspace: Path
    opened: list[Path | None] = field(default_factory=list)

    async def new_thread(self, **body: Any) -> str:
        created = await self.kun.create_thread(CreateThread(workspace=str(self.workspace), **body))
        return created.thread_id

    async def run(self, thread: str, text: str) -> TurnState:
        started = await self.kun.start_turn(thread, StartTurn(text=text))
        with anyio.fail_after(WAIT_SECONDS):
            return await self.kun.wait_turn(thread, started.turn_id)

    async def pending(self, thread: str, kind: str) -> str:
        """The first pending approval or question of the thread, once asked."""
        with anyio.fail_after(WAIT_SECONDS):
            while True:
                state: ThreadState = await self.kun.thread(thread)
                waiting: tuple[str, ...] = getattr(state, kind)
                if waiting:
                    return waiting[0]
                await anyio.sleep(0.01)


@asynccontextmanager
async def local(
    tmp_path: Path,
    script: Iterable[Any] | Responder = (),
    *,
    tools: ToolHost | None = None,
) -> AsyncIterator[Local]:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    (workspace / "a.py").write_text("print('a')\n")
    home = tmp_path / "home"
    model = ScriptedModelClient(script if callable(script) else list(script))
    opened: list[Path | None] = []

    def engine(
        recorder: EventRecorder, workspace: Path | None
    ) -> AbstractAsyncContextManager[Engine]:
        opened.append(workspace)
        return engine_over(home, model, tools=tools, recorder=recorder)

    async with open_home(home, engine) as kun:
        yield Local(kun, model, home, workspace, opened)
