"""Workers sharing one PostgreSQL database, in process: each an API app
(``kun serve``'s, lifespan entered) over a store of its own on the same
database, with its own scripted model, driven through
``httpx.ASGITransport``; they share the workspace folder, as workers on
one machine would."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx

from kun.model.scripted import ScriptedModelClient
from kun.runtime.recorder import EventRecorder
from kun.server.app import create_app
from kun.server.backend import backend_over
from kun.store import PostgresEventStore
from kun.tools.host import ToolHost
from tests.server.support import Api


@asynccontextmanager
async def worker(
    url: str,
    tmp_path: Path,
    name: str,
    script: Iterable[Any] = (),
    *,
    tools: ToolHost | None = None,
    roots: tuple[str, ...] = ("/",),
) -> AsyncIterator[Api]:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    home = tmp_path / name
    model = ScriptedModelClient(list(script))
    async with PostgresEventStore(url) as store, EventRecorder(store) as recorder:
        app = create_app(
            lambda: backend_over(home, model, tools=tools, recorder=recorder),
            workspace_roots=roots,
        )
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with (
            app.router.lifespan_context(app),
            httpx.AsyncClient(transport=transport, base_url=f"http://{name}") as client,
        ):
            yield Api(client, app, model, home, workspace)
