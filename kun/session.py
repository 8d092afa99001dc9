"""A TurnService over the JSONL store, for commands that run turns."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio

from kun.model.port import ModelClient
from kun.runtime.context import TurnLimits
from kun.runtime.recorder import EventRecorder
from kun.runtime.service import TurnService
from kun.store.jsonl import JsonlEventStore
from kun.tools.host import ToolHost, default_host

SYSTEM_PROMPT = (
    "You are kun, a coding agent working in the user's workspace. Use the tools to "
    "read, search and change files and to run commands; check before you change. "
    "Keep answers short and concrete, and say what you changed."
)


@asynccontextmanager
async def open_service(
    home: Path,
    model: ModelClient | None = None,
    *,
    tools: ToolHost | None = None,
    limits: TurnLimits | None = None,
    system_prompt: str = SYSTEM_PROMPT,
) -> AsyncIterator[TurnService]:
    """The service, its recorder and store, and the task group its turns
    run in; everything is flushed and closed on exit."""
    store = JsonlEventStore(home)
    async with store, EventRecorder(store) as recorder, anyio.create_task_group() as tg:
        service = TurnService(
            recorder,
            tg,
            model=model,
            tools=tools or (default_host() if model is not None else None),
            limits=limits,
            system_prompt=system_prompt,
        )
        try:
            yield service
        finally:
            tg.cancel_scope.cancel()
