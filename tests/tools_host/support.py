"""Helpers for the tool-host tests: a context on a workspace, and calls made
through a real host so arguments are validated as the loop would see them."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import msgspec

from kun.contracts.threads import Todo
from kun.tools import ToolContext, ToolOutput, default_host

HOST = default_host()

AskUser = Callable[[str, tuple[str, ...]], Awaitable[str | None]]


def context(
    workspace: Path,
    *,
    ask_user: AskUser | None = None,
    todos: list[tuple[Todo, ...]] | None = None,
) -> ToolContext:
    """A context on ``workspace``; ``todos`` (a one-element list) backs the
    todo tools when given."""
    if todos is None:
        return ToolContext(
            workspace=workspace, thread_id="t1", turn_id="u1", call_id="c1", ask_user=ask_user
        )
    store = todos

    async def set_todos(new: tuple[Todo, ...]) -> None:
        store[0] = new

    return ToolContext(
        workspace=workspace,
        thread_id="t1",
        turn_id="u1",
        call_id="c1",
        ask_user=ask_user,
        get_todos=lambda: store[0],
        set_todos=set_todos,
    )


async def call(name: str, workspace: Path | ToolContext, **args: Any) -> ToolOutput:
    ctx = workspace if isinstance(workspace, ToolContext) else context(workspace)
    return await HOST.execute(name, msgspec.json.encode(args), ctx)
