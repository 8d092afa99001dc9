"""An API app over a tmp home whose turns run on a scripted model, driven
in process through ``httpx.ASGITransport`` with the app's lifespan
entered around it (so the app owns its TurnService as ``kun serve``'s
does, and turns run in the background between requests)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
from starlette.applications import Starlette

from kun.domain.reduce import replay
from kun.domain.state import ThreadState
from kun.model.scripted import Responder, ScriptedModelClient
from kun.server.app import create_app
from kun.server.backend import backend_over
from kun.store.jsonl import JsonlEventStore
from kun.tools.host import ToolHost

WAIT_SECONDS = 10.0


@dataclass
class Api:
    client: httpx.AsyncClient
    app: Starlette
    model: ScriptedModelClient
    home: Path
    workspace: Path

    async def new_thread(self, **body: Any) -> str:
        response = await self.client.post(
            "/v1/threads", json={"workspace": str(self.workspace), **body}
        )
        assert response.status_code == 201, response.text
        thread_id: str = response.json()["thread_id"]
        return thread_id

    async def start(self, thread_id: str, text: str, **body: Any) -> str:
        response = await self.client.post(
            f"/v1/threads/{thread_id}/turns", json={"text": text, **body}
        )
        assert response.status_code == 202, response.text
        turn_id: str = response.json()["turn_id"]
        return turn_id

    async def turn(self, thread_id: str, turn_id: str) -> dict[str, Any]:
        response = await self.client.get(f"/v1/threads/{thread_id}/turns/{turn_id}")
        assert response.status_code == 200, response.text
        turn: dict[str, Any] = response.json()
        return turn

    async def wait(
        self,
        thread_id: str,
        turn_id: str,
        until: Callable[[dict[str, Any]], bool] | None = None,
    ) -> dict[str, Any]:
        """Poll the turn until ``until(turn)`` (default: it is settled)."""
        with anyio.fail_after(WAIT_SECONDS):
            while True:
                turn = await self.turn(thread_id, turn_id)
                settled = turn["status"] not in ("queued", "running")
                if until(turn) if until is not None else settled:
                    return turn
                await anyio.sleep(0.01)

    def log_state(self, thread_id: str) -> ThreadState:
        return replay(JsonlEventStore(self.home).read(thread_id))


@asynccontextmanager
async def api(
    tmp_path: Path,
    script: Iterable[Any] | Responder = (),
    *,
    tools: ToolHost | None = None,
    token: str | None = None,
    headers: dict[str, str] | None = None,
) -> AsyncIterator[Api]:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    (workspace / "a.py").write_text("print('a')\n")
    home = tmp_path / "home"
    model = ScriptedModelClient(script if callable(script) else list(script))
    app = create_app(lambda: backend_over(home, model, tools=tools), token=token)
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://kun", headers=headers) as client,
    ):
        yield Api(client, app, model, home, workspace)
