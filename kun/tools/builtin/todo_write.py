"""``todo_write``: replace the thread's todo list.

The list is replaced whole (the model sends every item, so there is no
partial-update state to reconcile). At most one item may be ``in_progress``
(SPEC §7.1): the first one keeps the status, later ones fall back to
``pending`` and the output says which, so the model learns the rule instead
of having its list silently changed. The list is recorded through
``ctx.set_todos``; without it the call is ``todos_unavailable``.
"""

from __future__ import annotations

from typing import Any

from kun.contracts.threads import Todo
from kun.tools.base import ToolContext, ToolEffect, ToolOutput, make_spec
from kun.tools.builtin._common import plural
from kun.tools.builtin.todo_list import render_todos
from kun.tools.errors import ToolError

MAX_TODOS = 100

SPEC = make_spec(
    "todo_write",
    "Replace this thread's todo list with the given items (send the whole list every "
    "time). Status is pending, in_progress or completed; keep exactly one item "
    "in_progress while working, and mark items completed as soon as they are done. "
    f"At most {MAX_TODOS} items.",
    {
        "todos": {
            "type": "array",
            "maxItems": MAX_TODOS,
            "items": {
                "type": "object",
                "properties": {
                    "content": {"type": "string", "minLength": 1},
                    "status": {"enum": ["pending", "in_progress", "completed"]},
                },
                "required": ["content", "status"],
                "additionalProperties": False,
            },
        },
    },
    required=["todos"],
)


def one_in_progress(todos: tuple[Todo, ...]) -> tuple[tuple[Todo, ...], tuple[Todo, ...]]:
    """``todos`` with every ``in_progress`` item after the first set back to
    ``pending``, and the items that were set back."""
    kept: list[Todo] = []
    demoted: list[Todo] = []
    seen = False
    for todo in todos:
        if todo.status == "in_progress":
            if seen:
                demoted.append(todo)
                todo = Todo(content=todo.content, status="pending")
            seen = True
        kept.append(todo)
    return tuple(kept), tuple(demoted)


class TodoWrite:
    spec = SPEC
    effect: ToolEffect = "state"

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        if ctx.set_todos is None:
            raise ToolError("todos_unavailable", "This thread has no todo list to write.")
        given = tuple(Todo(content=t["content"], status=t["status"]) for t in args["todos"])
        todos, demoted = one_in_progress(given)
        await ctx.set_todos(todos)
        lines = [render_todos(todos)]
        if demoted:
            names = ", ".join(repr(t.content) for t in demoted)
            lines.append(
                f"Note: only one item may be in_progress; {plural(len(demoted), 'item')} "
                f"set back to pending: {names}."
            )
        return ToolOutput(output="\n".join(lines))
