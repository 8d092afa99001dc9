"""Recorded SDK message sequences, a fake SDK for the engine, and a replay
of mapped drafts through kun's real reducer."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
import msgspec

from kun.contracts import events as ev
from kun.contracts.items import UserMessage
from kun.domain.reduce import replay
from kun.domain.state import ThreadState
from kun.runtime.agent_sdk.bridge import BridgedTool
from kun.runtime.agent_sdk.mapper import SdkEventMapper
from kun.runtime.agent_sdk.messages import (
    AssistantMessage,
    ResultMessage,
    SdkMessage,
    StreamEvent,
    SystemMessage,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from kun.runtime.agent_sdk.messages import (
    UserMessage as SdkUser,
)
from kun.runtime.agent_sdk.permissions import Permission

THREAD = "thr_sdk_test_0001"
TURN = "turn_sdk_0001"
SESSION = "0b9f6c3e-session"


def counter_ids() -> Callable[[str], str]:
    counts: dict[str, int] = {}

    def new_id(prefix: str) -> str:
        counts[prefix] = counts.get(prefix, 0) + 1
        return f"{prefix}_{counts[prefix]}"

    return new_id


def mapper() -> SdkEventMapper:
    return SdkEventMapper(TURN, provider="claude", model="claude-sonnet-4-5", new_id=counter_ids())


# -- recorded sequences --------------------------------------------------------


def init() -> SystemMessage:
    return SystemMessage("init", {"session_id": SESSION, "model": "claude-sonnet-4-5"})


def stream(kind: str, index: int = 0, **fields: Any) -> StreamEvent:
    return StreamEvent(event={"type": kind, "index": index, **fields}, session_id=SESSION)


def text_stream(index: int, *pieces: str) -> list[SdkMessage]:
    return [
        stream("content_block_start", index, content_block={"type": "text", "text": ""}),
        *(
            stream("content_block_delta", index, delta={"type": "text_delta", "text": p})
            for p in pieces
        ),
        stream("content_block_stop", index),
    ]


def thinking_stream(index: int, *pieces: str) -> list[SdkMessage]:
    return [
        stream("content_block_start", index, content_block={"type": "thinking", "thinking": ""}),
        *(
            stream("content_block_delta", index, delta={"type": "thinking_delta", "thinking": p})
            for p in pieces
        ),
        stream("content_block_delta", index, delta={"type": "signature_delta", "signature": "s"}),
    ]


def said(*blocks: Any) -> AssistantMessage:
    return AssistantMessage(content=list(blocks), model="claude-sonnet-4-5", message_id="msg_1")


def result(
    subtype: str = "success",
    *,
    is_error: bool = False,
    usage: dict[str, int] | None = None,
    cost: float | None = 0.0123,
    terminal_reason: str | None = "completed",
    **fields: Any,
) -> ResultMessage:
    return ResultMessage(
        subtype=subtype,
        is_error=is_error,
        session_id=SESSION,
        usage=usage
        or {
            "input_tokens": 12,
            "cache_read_input_tokens": 4_000,
            "cache_creation_input_tokens": 300,
            "output_tokens": 80,
        },
        total_cost_usd=cost,
        terminal_reason=terminal_reason,
        stop_reason="end_turn",
        **fields,
    )


TOOL_RUN: list[SdkMessage] = [
    init(),
    stream("message_start"),
    *text_stream(0, "Let me ", "look."),
    said(TextBlock("Let me look.")),
    said(ToolUseBlock("toolu_1", "Bash", {"command": "ls"})),
    SdkUser([ToolResultBlock("toolu_1", [{"type": "text", "text": "a.py\nb.py"}], False)]),
    stream("message_start"),
    said(ToolUseBlock("toolu_2", "mcp__kun__todo_write", {"todos": []})),
    SdkUser([ToolResultBlock("toolu_2", "no such todo", True)]),
    stream("message_start"),
    *text_stream(0, "Two files."),
    said(TextBlock("Two files.")),
    result(),
]


# -- the reducer ---------------------------------------------------------------


def numbered(drafts: Sequence[ev.Event], start: int) -> list[ev.Event]:
    return [
        msgspec.structs.replace(d, seq=start + i, at=1_000 + start + i, thread_id=THREAD)
        for i, d in enumerate(drafts)
    ]


def settle(outcome_status: str | None) -> ev.Event:
    base = {"seq": 0, "at": 0, "thread_id": THREAD, "turn_id": TURN}
    if outcome_status == "completed":
        return ev.TurnCompleted(**base, stop_reason="end_turn")
    if outcome_status == "aborted":
        return ev.TurnAborted(**base)
    return ev.TurnFailed(**base, code="agent_sdk_error", message="failed")


def opening() -> list[ev.Event]:
    return [
        ev.ThreadCreated(seq=1, at=1, thread_id=THREAD),
        ev.TurnStarted(seq=2, at=2, thread_id=THREAD, turn_id=TURN, provider="claude"),
        ev.ItemCompleted(
            seq=3, at=3, thread_id=THREAD, turn_id=TURN, item=UserMessage(id="msg_0", text="hi")
        ),
    ]


def replayed(drafts: Sequence[ev.Event], settled: str | None = None) -> ThreadState:
    """The thread after the opening, ``drafts`` and, if ``settled``, the
    event that settles the turn that way."""
    events = [*opening(), *numbered(drafts, 4)]
    if settled is not None:
        events += numbered([settle(settled)], 4 + len(drafts))
    return replay(events)


# -- a fake SDK for the engine -------------------------------------------------


Script = Callable[["FakeClient"], AsyncIterator[Any]]


@dataclass
class FakeClient:
    """Plays ``script`` (an async generator of SDK-like messages) once a
    query arrives; records queries, interrupts and its lifecycle. The script
    can call the engine's ``can_use_tool`` and the MCP handlers, as the
    real SDK would, through ``permit`` and ``call_tool``."""

    options: dict[str, Any]
    script: Script
    sdk: FakeSdk
    queries: list[str] = field(default_factory=list)
    interrupted: bool = False
    connected: bool = False
    disconnected: bool = False
    query_arrived: anyio.Event = field(default_factory=anyio.Event)

    async def connect(self) -> None:
        self.connected = True

    async def query(self, prompt: Any) -> None:
        async for message in prompt:
            self.queries.append(message["message"]["content"])
            self.sdk.uuids.append(message["uuid"])
        self.query_arrived.set()

    async def receive_messages(self) -> AsyncIterator[Any]:
        await self.query_arrived.wait()
        async for message in self.script(self):
            yield message

    async def interrupt(self) -> None:
        self.interrupted = True

    async def disconnect(self) -> None:
        self.disconnected = True

    async def permit(self, name: str, tool_input: dict[str, Any], tool_use_id: str) -> Any:
        context = type("Context", (), {"tool_use_id": tool_use_id})()
        return await self.options["can_use_tool"](name, tool_input, context)

    async def call_tool(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        server = self.options["mcp_servers"]["kun"]
        tool = next(t for t in server if t.name == name)
        return await tool.handler(args)


@dataclass
class FakeSdk:
    """An :class:`~kun.runtime.agent_sdk.sdk.SdkApi` whose client plays a
    script; the MCP server is the list of bridged tools itself and
    permissions stay kun's :class:`Permission`."""

    script: Script
    clients: list[FakeClient] = field(default_factory=list)
    uuids: list[str] = field(default_factory=list)

    def client(self, options: dict[str, Any]) -> FakeClient:
        client = FakeClient(options, self.script, self)
        self.clients.append(client)
        return client

    def mcp_server(self, name: str, tools: Sequence[BridgedTool]) -> Any:
        return list(tools)

    def permission(self, answer: Permission) -> Any:
        return answer

    def failure_code(self, exc: BaseException) -> str | None:
        return "agent_sdk_fake_failure" if isinstance(exc, ConnectionError) else None
