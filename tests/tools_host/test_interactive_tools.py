"""request_user_input, todo_list and todo_write."""

from __future__ import annotations

from pathlib import Path

import pytest

from kun.contracts.threads import Todo
from kun.tools.builtin.todo_write import one_in_progress
from tests.tools_host.support import call, context

pytestmark = pytest.mark.anyio


async def test_user_input_asks_with_options(ws: Path) -> None:
    asked: list[tuple[str, tuple[str, ...]]] = []

    async def ask(question: str, options: tuple[str, ...]) -> str | None:
        asked.append((question, options))
        return "blue"

    result = await call(
        "request_user_input", context(ws, ask_user=ask), question="Color?", options=["red", "blue"]
    )
    assert asked == [("Color?", ("red", "blue"))]
    assert not result.is_error and result.output == "The user answered: blue"


async def test_user_input_without_an_answer(ws: Path) -> None:
    async def dismiss(question: str, options: tuple[str, ...]) -> str | None:
        return None

    result = await call("request_user_input", context(ws, ask_user=dismiss), question="Go?")
    assert not result.is_error
    assert result.output.startswith("The user gave no answer.")


async def test_user_input_in_an_unattended_turn(ws: Path) -> None:
    result = await call("request_user_input", context(ws), question="Go?")
    assert result.is_error and result.code == "user_input_unavailable"
    assert "No user is available" in result.output


async def test_todo_list_reads_the_thread_todos(ws: Path) -> None:
    store = [
        (Todo(content="plan", status="completed"), Todo(content="build", status="in_progress"))
    ]
    result = await call("todo_list", context(ws, todos=store))
    assert result.output == "1. [x] plan\n2. [~] build"
    empty = await call("todo_list", context(ws))
    assert empty.output == "The todo list is empty."


async def test_todo_write_replaces_the_list(ws: Path) -> None:
    store: list[tuple[Todo, ...]] = [(Todo(content="old"),)]
    items = [
        {"content": "a", "status": "completed"},
        {"content": "b", "status": "in_progress"},
        {"content": "c", "status": "pending"},
    ]
    result = await call("todo_write", context(ws, todos=store), todos=items)
    assert not result.is_error
    assert store[0] == (
        Todo(content="a", status="completed"),
        Todo(content="b", status="in_progress"),
        Todo(content="c", status="pending"),
    )
    assert result.output == "1. [x] a\n2. [~] b\n3. [ ] c"


async def test_todo_write_keeps_one_in_progress_and_says_so(ws: Path) -> None:
    store: list[tuple[Todo, ...]] = [()]
    items = [{"content": name, "status": "in_progress"} for name in ("a", "b", "c")]
    result = await call("todo_write", context(ws, todos=store), todos=items)
    assert [t.status for t in store[0]] == ["in_progress", "pending", "pending"]
    assert "only one item may be in_progress; 2 items set back to pending: 'b', 'c'." in (
        result.output
    )


async def test_todo_write_without_a_thread_list(ws: Path) -> None:
    result = await call("todo_write", ws, todos=[])
    assert result.code == "todos_unavailable"


def test_one_in_progress_is_a_pure_rule() -> None:
    todos = (
        Todo(content="x", status="pending"),
        Todo(content="y", status="in_progress"),
        Todo(content="z", status="in_progress"),
    )
    kept, demoted = one_in_progress(todos)
    assert [t.status for t in kept] == ["pending", "in_progress", "pending"]
    assert demoted == (todos[2],)
    assert one_in_progress(kept) == (kept, ())
