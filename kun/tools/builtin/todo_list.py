"""``todo_list``: the thread's todo list, as the model last wrote it.

Effect ``state``: it reads the thread's own state, not the workspace.
:func:`render_todos` is the one rendering both todo tools answer with.
"""

from __future__ import annotations

from typing import Any

from kun.contracts.threads import Todo
from kun.tools.base import ToolContext, ToolEffect, ToolOutput, make_spec

_MARKS = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]"}

SPEC = make_spec(
    "todo_list",
    "Show this thread's todo list: each item with its status ([ ] pending, [~] in progress, "
    "[x] completed).",
    {},
)


def render_todos(todos: tuple[Todo, ...]) -> str:
    """``1. [~] content`` lines, or a note that the list is empty."""
    if not todos:
        return "The todo list is empty."
    return "\n".join(
        f"{i}. {_MARKS.get(t.status, '[?]')} {t.content}" for i, t in enumerate(todos, start=1)
    )


class TodoList:
    spec = SPEC
    effect: ToolEffect = "state"

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        return ToolOutput(output=render_todos(ctx.get_todos()))
