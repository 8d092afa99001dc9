"""kun's own tools, lent to the SDK's model through an in-process MCP
server named ``kun`` (the model sees ``mcp__kun__<tool>``).

Only what Claude Code lacks is bridged: the thread's goal and todos, plans,
questions to the user, ``delegate_task`` when the catalogue has it. Never
the tools both have (:data:`NEVER_BRIDGED`: Claude Code's read, bash, edit,
write, grep, find, ls are better at home there, and kun's read_file,
write_file, edit_file, list_dir, glob, grep, bash would be a second, worse
way to do the same), nor ``echo``. The set is the turn's step tools
(:func:`kun.runtime.plan.step_tools` via the request: plan-mode narrowed, an
active goal's tools kept), so a plan-mode turn bridges its plan-mode tools
only.

A bridged call runs through kun's ToolHost with the same context a native
call gets (:func:`kun.runtime.dispatch.tool_context`): todos, goals and
plans are recorded in kun's log as they would be natively, a question
waits on kun's own question gate, and ``delegate_task`` links its side
thread to the call item the log records. Plan mode's refusal, and a
sub-agent's link, apply as natively.
The call's ledger (started, finished, its result item) is the mapper's, from
the SDK's messages, so each call is recorded once. A handler never raises:
a failure is an ``is_error`` text result, and the SDK's turn goes on.
"""

from __future__ import annotations

import json
from collections import defaultdict, deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
import msgspec

from kun.contracts.items import ToolCall
from kun.contracts.model import ToolSpec
from kun.ids import new_thread_local_id
from kun.runtime.agent_sdk.mapper import BRIDGE_PREFIX
from kun.runtime.context import TurnRun
from kun.runtime.dispatch import tool_context
from kun.runtime.mirror import refuse_outside_link
from kun.runtime.plan import refuse_outside_plan

__all__ = [
    "NEVER_BRIDGED",
    "SERVER_NAME",
    "BridgedTool",
    "CallIds",
    "bridge_tools",
    "bridgeable",
]

SERVER_NAME = "kun"
NEVER_BRIDGED = frozenset(
    {
        # Claude Code's own, by kun's names for them and the upstream's.
        "read",
        "bash",
        "edit",
        "write",
        "grep",
        "find",
        "ls",
        # kun's file and shell tools: Claude Code has its own.
        "read_file",
        "write_file",
        "edit_file",
        "list_dir",
        "glob",
        # Means nothing here.
        "echo",
    }
)

Handler = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


@dataclass(frozen=True)
class BridgedTool:
    """One tool for the MCP server: its name (kun's), description, JSON
    Schema and handler."""

    name: str
    description: str
    input_schema: dict[str, Any]
    handler: Handler


ITEM_PATIENCE_SECONDS = 5.0
"""How long a bridged call waits for its call item to be recorded: the SDK
runs the handler as soon as it allowed the call, which may be before the
engine has recorded the message that asked for it."""


@dataclass
class CallIds:
    """The SDK's ``tool_use`` ids of bridged calls, learnt when it asks
    permission for them, handed to the handler that runs each (an MCP
    handler is not told its call's id), and the ids of the call items the
    log records for them. Calls of one tool run in the order they were
    allowed."""

    _waiting: defaultdict[str, deque[str]] = field(default_factory=lambda: defaultdict(deque))
    _items: dict[str, str] = field(default_factory=dict)
    _recorded: anyio.Event = field(default_factory=anyio.Event)

    def allowed(self, name: str, tool_use_id: str | None) -> None:
        if tool_use_id:
            self._waiting[name].append(tool_use_id)

    def take(self, name: str) -> str | None:
        """The id of the next allowed call of ``name``; ``None`` if the SDK
        ran it without asking (it always asks; a test's fake may not)."""
        waiting = self._waiting.get(name)
        return waiting.popleft() if waiting else None

    def recorded(self, call_id: str, item_id: str) -> None:
        """The log now holds the call item ``item_id`` of ``call_id``."""
        self._items[call_id] = item_id
        self._recorded.set()
        self._recorded = anyio.Event()

    async def item(self, call_id: str) -> str | None:
        """The call item of ``call_id`` once recorded (``None`` if it is not
        within :data:`ITEM_PATIENCE_SECONDS`)."""
        with anyio.move_on_after(ITEM_PATIENCE_SECONDS):
            while call_id not in self._items:
                await self._recorded.wait()
        return self._items.get(call_id)


def bridgeable(specs: Sequence[ToolSpec]) -> tuple[ToolSpec, ...]:
    """The tools of ``specs`` the SDK's model gets from kun."""
    return tuple(spec for spec in specs if spec.name not in NEVER_BRIDGED)


def model_name(name: str) -> str:
    """What the SDK's model calls kun's tool ``name``."""
    return f"{BRIDGE_PREFIX}{name}"


def bridge_tools(run: TurnRun, specs: Sequence[ToolSpec], ids: CallIds) -> list[BridgedTool]:
    """The MCP tools of ``specs``, each run through kun (see the module
    docstring)."""
    return [
        BridgedTool(
            name=spec.name,
            description=spec.description,
            input_schema=_schema(spec),
            handler=_handler(run, spec.name, ids),
        )
        for spec in specs
    ]


def _schema(spec: ToolSpec) -> dict[str, Any]:
    """The tool's JSON Schema as an object; with ``properties`` always, or
    the SDK would read it as a map of parameter names to Python types."""
    try:
        schema = json.loads(bytes(spec.parameters))
    except ValueError:
        schema = {}
    if not isinstance(schema, dict):
        schema = {}
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    return schema


def _handler(run: TurnRun, name: str, ids: CallIds) -> Handler:
    async def handle(args: dict[str, Any]) -> dict[str, Any]:
        tool_use_id = ids.take(name)
        try:
            refused = refuse_outside_plan(run, name) or refuse_outside_link(run, name)
            if refused is not None:
                return _result(refused.output, is_error=True)
            arguments = json.dumps(args, ensure_ascii=False).encode()
            item_id = await ids.item(tool_use_id) if tool_use_id else None
            call = ToolCall(
                id=item_id or new_thread_local_id("call"),
                call_id=tool_use_id or new_thread_local_id("call"),
                name=name,
                arguments=msgspec.Raw(arguments),
            )
            output = await run.tools.execute(name, arguments, tool_context(run, call))
        except Exception as exc:
            return _result(f"{name} failed in kun: {type(exc).__name__}: {exc}", is_error=True)
        return _result(output.output, is_error=output.is_error)

    return handle


def _result(text: str, *, is_error: bool) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "is_error": is_error}
