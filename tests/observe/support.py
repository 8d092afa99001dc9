"""A real turn (scripted model, one tool call) on a service an observer
watches, with a fake secret in the environment and in the tool's output."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import msgspec

from kun.contracts.model import ModelStreamChunk, TextDeltaChunk, UsageChunk
from kun.contracts.threads import ApprovalPolicy, ThreadSettings
from kun.contracts.usage import UsageSnapshot
from kun.domain.state import TurnState
from kun.model.port import ModelClient
from kun.model.redact import Redactor
from kun.model.scripted import ScriptedModelClient, text_reply, tool_reply
from kun.observe.observer import Observer
from kun.runtime.recorder import EventRecorder
from kun.runtime.service import TurnService
from kun.store.jsonl import JsonlEventStore
from kun.tools.base import ToolContext, ToolEffect, ToolOutput, make_spec
from kun.tools.host import ToolHost

SECRET = "sk-test-0bservab1l1ty-FAKE-KEY-4242"
PROMPT = "Please summarise the ledger of Zanzibar quarterly receipts"
REPLY = "All receipts of Zanzibar are in order."


@dataclass
class LeakyTool:
    """Prints the API key it finds in the environment, as a careless
    command would."""

    name: str = "peek"

    @property
    def spec(self) -> Any:
        return make_spec(self.name, "shows the environment", {"what": {"type": "string"}})

    @property
    def effect(self) -> ToolEffect:
        return "read"

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        return ToolOutput(output=f"FAKE_API_KEY={SECRET} what={args.get('what')}")


def usage(prompt: int, completion: int, cost: float | None) -> UsageChunk:
    snapshot = UsageSnapshot(prompt_tokens=prompt, completion_tokens=completion, cost_usd=cost)
    return UsageChunk(usage=snapshot, model="scripted-1-20261201", request_id="req_1")


def script() -> list[list[ModelStreamChunk]]:
    call = tool_reply("peek", {"what": "env"}, call_id="call_peek")
    return [
        [call[0], usage(120, 15, 0.0012), *call[1:]],
        [TextDeltaChunk(text=REPLY), usage(180, 9, 0.0021), *text_reply("")[1:]],
    ]


@asynccontextmanager
async def observed(
    tmp_path: Path,
    observer: Observer | None,
    *,
    model: ModelClient | None = None,
    tools: ToolHost | None = None,
    policy: ApprovalPolicy = "on-request",
    thread_id: str | None = None,
) -> AsyncIterator[tuple[TurnService, str]]:
    """The service, watched by ``observer`` (``None``: not watched), and a
    thread (made, unless ``thread_id`` names one already in the home)."""
    workspace = tmp_path / "ws"
    workspace.mkdir(parents=True, exist_ok=True)
    model = model if model is not None else ScriptedModelClient(script())
    tools = tools if tools is not None else ToolHost([LeakyTool()], redact=Redactor([SECRET]).scrub)
    store = JsonlEventStore(tmp_path / "home")
    async with store, EventRecorder(store) as recorder, anyio.create_task_group() as tg:
        watched = observer.watch(tools) if observer is not None else tools
        hooks = (observer,) if observer is not None else ()
        service = TurnService(recorder, tg, model=model, tools=watched, hooks=hooks)
        if thread_id is None:
            settings = ThreadSettings(workspace=str(workspace), approval_policy=policy)
            thread_id = await service.create_thread(settings)
        try:
            yield service, thread_id
        finally:
            tg.cancel_scope.cancel()


async def run_turn(service: TurnService, thread_id: str, text: str = PROMPT) -> TurnState:
    turn_id = await service.start_turn(thread_id, text)
    with anyio.fail_after(10):
        turn = await service.wait_turn(thread_id, turn_id)
    # turn_ended runs just after the turn settles
    for _ in range(50):
        await anyio.lowlevel.checkpoint()
    return turn


async def until(condition: Callable[[], object]) -> None:
    """Wait for ``condition`` (10 s at most)."""
    with anyio.fail_after(10):
        while True:
            if condition():
                return
            await anyio.sleep(0.01)


class Lines:
    """A sink keeping its records, for asserting on."""

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []
        self.closed = False

    def write(self, record: dict[str, Any]) -> None:
        self.records.append(msgspec.json.decode(msgspec.json.encode(record)))

    def close(self) -> None:
        self.closed = True

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [r for r in self.records if r["kind"] == kind]
