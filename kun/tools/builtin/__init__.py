"""The built-in tools, one module each."""

from __future__ import annotations

from kun.tools.base import Tool
from kun.tools.builtin.bash import Bash
from kun.tools.builtin.create_plan import CreatePlan
from kun.tools.builtin.delegate_task import DelegateTask
from kun.tools.builtin.edit_file import EditFile
from kun.tools.builtin.glob import Glob
from kun.tools.builtin.goal_tools import CreateGoal, GetGoal, UpdateGoal
from kun.tools.builtin.grep import Grep
from kun.tools.builtin.list_dir import ListDir
from kun.tools.builtin.read_file import ReadFile
from kun.tools.builtin.todo_list import TodoList
from kun.tools.builtin.todo_write import TodoWrite
from kun.tools.builtin.user_input import RequestUserInput
from kun.tools.builtin.web_search import WebSearch
from kun.tools.builtin.write_file import WriteFile
from kun.tools.environment import ToolEnvironment
from kun.tools.sandbox import SandboxSettings

__all__ = [
    "Bash",
    "CreateGoal",
    "CreatePlan",
    "DelegateTask",
    "EditFile",
    "GetGoal",
    "Glob",
    "Grep",
    "ListDir",
    "ReadFile",
    "RequestUserInput",
    "TodoList",
    "TodoWrite",
    "UpdateGoal",
    "WebSearch",
    "WriteFile",
    "builtin_tools",
]


def builtin_tools(
    environment: ToolEnvironment | None = None, sandbox: SandboxSettings | None = None
) -> tuple[Tool, ...]:
    """One instance of every built-in tool; ``environment`` says which
    variables ``bash`` withholds from its commands, ``sandbox`` when they
    run sandboxed (:mod:`kun.tools.sandbox`)."""
    return (
        ReadFile(),
        ListDir(),
        Glob(),
        Grep(),
        WriteFile(),
        EditFile(),
        Bash(environment, sandbox),
        RequestUserInput(),
        TodoList(),
        TodoWrite(),
        CreatePlan(),
        GetGoal(),
        CreateGoal(),
        UpdateGoal(),
        DelegateTask(),
    )
