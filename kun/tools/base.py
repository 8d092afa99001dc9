"""What a tool is: a spec the model sees, an effect the approval policy
judges, and one verb, ``run``.

Contract of :meth:`Tool.run`:

* ``args`` has already been validated against ``spec.parameters`` by the
  host, so a tool reads its fields without re-checking their types.
* A failure the model can act on is raised as
  :class:`~kun.tools.errors.ToolError` (typed, with a code) or returned as a
  :class:`ToolOutput` with ``is_error``; any other exception is a crash that
  the host reports as ``tool_execution_failed``.
* Cancellation is never swallowed: a tool that holds resources (a process)
  releases them under a shielded scope and lets the cancellation propagate.

:class:`ToolContext` carries what a call may touch beyond its arguments. A
capability is a field: ``ask_user`` is ``None`` in an unattended turn, and
then there is no user to ask.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

import msgspec

from kun.contracts.items import Attachment, BlobRef, FileCheckpoint
from kun.contracts.model import ToolSpec
from kun.contracts.threads import ApprovalPolicy, Goal, Todo

ToolEffect = Literal["read", "write", "exec", "interact", "state", "delegate"]
"""What running a tool can do, the one fact the approval policy judges:

* ``read``: looks at the workspace, changes nothing.
* ``write``: changes files inside the workspace.
* ``exec``: runs a command; anything may happen.
* ``interact``: asks the user a question.
* ``state``: reads or changes the thread's own state (todos).
* ``delegate``: hands a task to a sub-agent (``delegate_task``), whose own
  calls are judged one by one.
"""


class ToolOutput(msgspec.Struct, frozen=True, kw_only=True):
    """The result of one call, as the model will read it.

    ``code`` classifies an error (``unknown_tool``, ``invalid_arguments``,
    ``tool_execution_failed``, ``outside_workspace``, ``timeout``, ...; see
    :mod:`kun.tools.errors`); ``attachments`` are files the tool produced for
    the model to see (an image it read); ``diff`` what a file tool changed,
    for people only (:mod:`kun.tools.preview`); ``checkpoint`` what it
    replaced, so a rewind can put it back (:mod:`kun.domain.checkpoints`)."""

    output: str
    is_error: bool = False
    code: str | None = None
    attachments: tuple[Attachment, ...] = ()
    diff: str = ""
    checkpoint: FileCheckpoint | None = None


def _no_todos() -> tuple[Todo, ...]:
    return ()


def _no_goal() -> Goal | None:
    return None


@dataclass(frozen=True)
class ToolContext:
    """Everything one call may use besides its arguments.

    ``ask_user`` asks the user a question with optional choices and returns
    the answer, or ``None`` when none was given (dismissed, cancelled);
    ``None`` itself means an unattended turn. ``get_todos``/``set_todos``
    read and replace the thread's todo list (``set_todos`` records it);
    ``get_goal``/``set_goal`` do the same for its goal.
    ``record_plan`` records a plan (summary, markdown) as the turn's ``plan``
    item and returns a line saying what became of its checklist.
    ``approval_policy`` is the policy the call runs under (``None``: no
    thread's); it decides whether ``bash`` runs sandboxed
    (:meth:`kun.tools.sandbox.SandboxSettings.wanted`)."""

    workspace: Path
    thread_id: str
    turn_id: str
    call_id: str
    ask_user: Callable[[str, tuple[str, ...]], Awaitable[str | None]] | None = None
    get_todos: Callable[[], tuple[Todo, ...]] = _no_todos
    set_todos: Callable[[tuple[Todo, ...]], Awaitable[None]] | None = None
    save_side_file: Callable[[bytes], BlobRef] | None = None
    """Stores bytes in the thread's side files, durably, and returns their
    reference; blocking (a file tool calls it from its worker thread before
    it changes a file). ``None``: no checkpoints (a host without a store)."""
    get_goal: Callable[[], Goal | None] = _no_goal
    set_goal: Callable[[Goal | None], Awaitable[None]] | None = None
    record_plan: Callable[[str, str], Awaitable[str]] | None = None
    approval_policy: ApprovalPolicy | None = None
    delegate: Callable[[str, str | None], Awaitable[ToolOutput]] | None = None
    """Runs a task (and an agent profile's name) on a side thread and
    returns its answer as the call's result (:mod:`kun.runtime.delegation`);
    ``None``: no delegation here (no runtime for it, or too deep)."""


class Tool(Protocol):
    """A tool the host can run."""

    @property
    def spec(self) -> ToolSpec: ...

    @property
    def effect(self) -> ToolEffect: ...

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput: ...


def make_spec(
    name: str,
    description: str,
    properties: Mapping[str, Any],
    required: Sequence[str] = (),
) -> ToolSpec:
    """A spec whose parameters are a closed JSON object schema (unknown fields
    are refused, so a misspelt argument is reported instead of ignored). The
    schema is encoded once, so the bytes sent never change between requests."""
    schema: dict[str, Any] = {
        "type": "object",
        "properties": dict(properties),
        "required": list(required),
        "additionalProperties": False,
    }
    return ToolSpec(
        name=name,
        description=description,
        parameters=msgspec.Raw(msgspec.json.encode(schema)),
    )
