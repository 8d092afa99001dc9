"""A TurnService on a tmp workspace with a scripted model, for loop tests."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import msgspec

from kun.contracts.model import (
    CompletedChunk,
    ModelStreamChunk,
    ToolCallCompleteChunk,
    ToolCallDeltaChunk,
)
from kun.contracts.threads import ApprovalPolicy, ThreadSettings
from kun.domain.state import ThreadState, TurnState
from kun.model.scripted import Responder, ScriptedModelClient
from kun.runtime.context import TurnLimits
from kun.runtime.recorder import EventRecorder
from kun.runtime.service import TurnService
from kun.store.jsonl import JsonlEventStore
from kun.tools.base import Tool, ToolContext, ToolEffect, ToolOutput, make_spec
from kun.tools.host import ToolHost
from kun.tools.host import default_host as builtin_host


def calls(*specs: tuple[str, dict[str, Any]], prefix: str = "call") -> list[ModelStreamChunk]:
    """One response calling several tools at once (parallel calls); call ids
    are ``<prefix>_<index>_<name>``."""
    chunks: list[ModelStreamChunk] = []
    for index, (name, arguments) in enumerate(specs):
        raw = msgspec.json.encode(arguments)
        call_id = f"{prefix}_{index}_{name}"
        chunks.append(
            ToolCallDeltaChunk(call_id=call_id, name=name, arguments=raw.decode(), index=index)
        )
        chunks.append(
            ToolCallCompleteChunk(
                call_id=call_id, name=name, arguments=msgspec.Raw(raw), index=index
            )
        )
    chunks.append(CompletedChunk(stop_reason="tool_calls"))
    return chunks


@dataclass
class SlowTool:
    """A tool that waits until released (or forever), to interrupt mid-tool."""

    name: str = "slow"
    release: anyio.Event | None = None
    started: anyio.Event | None = None

    @property
    def spec(self) -> Any:
        return make_spec(self.name, "waits", {})

    @property
    def effect(self) -> ToolEffect:
        return "read"

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        if self.started is not None:
            self.started.set()
        if self.release is None:
            await anyio.sleep_forever()
        else:
            await self.release.wait()
        return ToolOutput(output="released")


@dataclass
class CrashTool:
    name: str = "crash"

    @property
    def spec(self) -> Any:
        return make_spec(self.name, "always raises", {})

    @property
    def effect(self) -> ToolEffect:
        return "read"

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        raise ZeroDivisionError("the tool divided by zero")


def host_with(*extra: Tool) -> ToolHost:
    from kun.tools.builtin import builtin_tools

    return ToolHost([*builtin_tools(), *extra])


@dataclass
class Harness:
    service: TurnService
    model: ScriptedModelClient
    home: Path
    workspace: Path
    thread_id: str

    def state(self) -> ThreadState:
        return self.service.state(self.thread_id)

    def turn(self, turn_id: str) -> TurnState:
        return next(t for t in self.state().turns if t.turn_id == turn_id)

    async def run(self, text: str, **kwargs: Any) -> TurnState:
        turn_id = await self.service.start_turn(self.thread_id, text, **kwargs)
        with anyio.fail_after(10):
            return await self.service.wait_turn(self.thread_id, turn_id)


@asynccontextmanager
async def harness(
    tmp_path: Path,
    script: Iterable[Any] | Responder,
    *,
    policy: ApprovalPolicy = "on-request",
    tools: ToolHost | None = None,
    limits: TurnLimits | None = None,
    delay: float = 0.0,
) -> AsyncIterator[Harness]:
    """``script``: the model's responses in order, or one function
    answering every request (a model that never stops by itself)."""
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    (workspace / "a.py").write_text("print('a')\n")
    (workspace / "b.py").write_text("print('b')\n")
    model = ScriptedModelClient(script if callable(script) else list(script), delay=delay)
    store = JsonlEventStore(tmp_path / "home")
    async with store, EventRecorder(store) as recorder, anyio.create_task_group() as tg:
        service = TurnService(
            recorder, tg, model=model, tools=tools or builtin_host(), limits=limits
        )
        settings = ThreadSettings(workspace=str(workspace), approval_policy=policy)
        thread_id = await service.create_thread(settings)
        try:
            yield Harness(service, model, tmp_path / "home", workspace, thread_id)
        finally:
            tg.cancel_scope.cancel()
