"""ToolHost: the catalogue, argument validation and the error layers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest

from kun.contracts.model import ToolSpec
from kun.tools import ToolContext, ToolEffect, ToolError, ToolHost, ToolOutput, make_spec
from tests.tools_host.support import HOST, context

pytestmark = pytest.mark.anyio


class Scripted:
    """A tool whose behaviour is a plain function."""

    def __init__(self, name: str, behaviour: Any, schema: dict[str, Any] | None = None) -> None:
        self.spec = make_spec(name, f"The {name} tool.", schema or {})
        self.effect: ToolEffect = "read"
        self.behaviour = behaviour
        self.calls: list[dict[str, Any]] = []

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        self.calls.append(args)
        result: ToolOutput = await self.behaviour(args)
        return result


async def echo(args: dict[str, Any]) -> ToolOutput:
    return ToolOutput(output=repr(args))


async def crash(args: dict[str, Any]) -> ToolOutput:
    raise KeyError("boom")


async def typed_failure(args: dict[str, Any]) -> ToolOutput:
    raise ToolError("rate_limited_upstream", "The service said slow down; retry later.")


async def sleep_forever(args: dict[str, Any]) -> ToolOutput:
    await anyio.sleep_forever()
    raise AssertionError("unreachable")


def ctx(tmp_path: Path, *, attended: bool = True) -> ToolContext:
    async def ask(question: str, options: tuple[str, ...]) -> str | None:
        return "yes"

    return context(tmp_path, ask_user=ask if attended else None)


def test_specs_sorted_and_user_input_optional() -> None:
    names = [s.name for s in HOST.specs()]
    assert names == sorted(names)
    assert set(names) == {
        "bash",
        "create_goal",
        "create_plan",
        "delegate_task",
        "edit_file",
        "get_goal",
        "glob",
        "grep",
        "list_dir",
        "read_file",
        "request_user_input",
        "todo_list",
        "todo_write",
        "update_goal",
        "write_file",
    }
    unattended = [s.name for s in HOST.specs(user_input=False)]
    assert "request_user_input" not in unattended
    assert len(unattended) == len(names) - 1


def test_effects_and_lookup() -> None:
    expected = {
        "read_file": "read",
        "list_dir": "read",
        "glob": "read",
        "grep": "read",
        "write_file": "write",
        "edit_file": "write",
        "bash": "exec",
        "request_user_input": "interact",
        "todo_list": "state",
        "todo_write": "state",
        "get_goal": "state",
        "create_goal": "state",
        "update_goal": "state",
    }
    assert {name: HOST.effect(name) for name in expected} == expected
    assert HOST.effect("nope") is None
    assert HOST.get("nope") is None
    assert HOST.get("grep") is not None


def test_every_builtin_schema_is_a_closed_object_with_a_description() -> None:
    for spec in HOST.specs():
        schema = msgspec.json.decode(spec.parameters)
        assert schema["type"] == "object"
        assert schema["additionalProperties"] is False
        assert 20 < len(spec.description) < 600, spec.name


def test_duplicate_names_and_broken_schemas_fail_at_construction() -> None:
    with pytest.raises(ValueError, match="two tools are named 'x'"):
        ToolHost([Scripted("x", echo), Scripted("x", echo)])
    broken = Scripted("bad", echo)
    broken.spec = ToolSpec(name="bad", parameters=msgspec.Raw(b'{"type": 5}'))
    with pytest.raises(ValueError, match="not a valid schema"):
        ToolHost([broken])


async def test_unknown_tool_lists_the_available_ones(tmp_path: Path) -> None:
    result = await HOST.execute("read_fil", b"{}", ctx(tmp_path))
    assert result.is_error and result.code == "unknown_tool"
    assert "There is no tool named 'read_fil'. Did you mean 'read_file'?" in result.output
    assert "Available tools: bash, " in result.output
    assert "request_user_input" in result.output
    unattended = await HOST.execute("zzz", b"{}", ctx(tmp_path, attended=False))
    assert "request_user_input" not in unattended.output
    assert "Did you mean" not in unattended.output


@pytest.mark.parametrize(
    "arguments",
    [b'{"path": "a"', b"[1, 2]", b'"text"', b"null", b'{"__raw": "path=a.txt"}'],
)
async def test_malformed_arguments(tmp_path: Path, arguments: bytes) -> None:
    result = await HOST.execute("read_file", arguments, ctx(tmp_path))
    assert result.is_error and result.code == "invalid_arguments"
    assert "malformed JSON" in result.output and "did not run" in result.output


async def test_raw_arguments_are_quoted_back(tmp_path: Path) -> None:
    result = await HOST.execute("read_file", b'{"__raw": "path=a.txt"}', ctx(tmp_path))
    assert "'path=a.txt'" in result.output


async def test_empty_arguments_mean_an_empty_object(tmp_path: Path) -> None:
    tool = Scripted("t", echo)
    result = await ToolHost([tool]).execute("t", b"  ", ctx(tmp_path))
    assert result.output == "{}"


@pytest.mark.parametrize(
    ("name", "arguments", "fragments"),
    [
        ("read_file", {"path": "a", "start_line": "x"}, ["start_line:", "(rule: type)"]),
        ("read_file", {"path": "a", "start_line": 0}, ["start_line:", "(rule: minimum)"]),
        ("read_file", {}, ["path: missing (rule: required)"]),
        ("read_file", {"path": "a", "limit": 5}, ["limit: not a parameter"]),
        (
            "todo_write",
            {"todos": [{"content": "a", "status": "pending"}, {"content": "b", "status": "done"}]},
            ["todos[1].status:", "(rule: enum)"],
        ),
        ("todo_write", {"todos": [{"content": "a"}]}, ["todos[0].status: missing"]),
        ("bash", {"command": "ls", "timeout_s": 1000}, ["timeout_s:", "(rule: maximum)"]),
    ],
)
async def test_schema_violations_name_field_and_rule(
    tmp_path: Path, name: str, arguments: dict[str, Any], fragments: list[str]
) -> None:
    result = await HOST.execute(name, msgspec.json.encode(arguments), ctx(tmp_path))
    assert result.is_error and result.code == "invalid_arguments"
    assert result.output.startswith(f"Invalid arguments for {name}; the call did not run:")
    for fragment in fragments:
        assert fragment in result.output
    assert "Parameters: " in result.output


async def test_schema_violation_lists_the_parameters(tmp_path: Path) -> None:
    result = await HOST.execute("read_file", b"{}", ctx(tmp_path))
    assert (
        "Parameters: path (string, required), start_line (integer), end_line (integer)."
        in result.output
    )


async def test_every_violation_is_reported_up_to_a_limit(tmp_path: Path) -> None:
    props = {f"p{i}": {"type": "integer"} for i in range(8)}
    tool = Scripted("t", echo, props)
    args = {f"p{i}": "x" for i in range(8)}
    result = await ToolHost([tool]).execute("t", msgspec.json.encode(args), ctx(tmp_path))
    assert result.output.count("(rule: type)") == 5
    assert "... and 3 more" in result.output
    assert tool.calls == []


async def test_valid_arguments_reach_the_tool(tmp_path: Path) -> None:
    tool = Scripted("t", echo, {"n": {"type": "integer"}})
    result = await ToolHost([tool]).execute("t", b'{"n": 3}', ctx(tmp_path))
    assert not result.is_error and result.output == "{'n': 3}"


async def test_crashing_tool_is_tool_execution_failed(tmp_path: Path) -> None:
    result = await ToolHost([Scripted("t", crash)]).execute("t", b"{}", ctx(tmp_path))
    assert result.is_error and result.code == "tool_execution_failed"
    assert result.output == "The tool t failed: KeyError: 'boom'"


async def test_tool_error_keeps_its_code(tmp_path: Path) -> None:
    result = await ToolHost([Scripted("t", typed_failure)]).execute("t", b"{}", ctx(tmp_path))
    assert result.is_error and result.code == "rate_limited_upstream"
    assert result.output == "The service said slow down; retry later."


async def test_cancellation_propagates(tmp_path: Path) -> None:
    host = ToolHost([Scripted("t", sleep_forever)])
    outcome: list[str] = []
    async with anyio.create_task_group() as tg:

        async def run() -> None:
            try:
                await host.execute("t", b"{}", ctx(tmp_path))
                outcome.append("returned")
            except anyio.get_cancelled_exc_class():
                outcome.append("cancelled")
                raise

        tg.start_soon(run)
        await anyio.wait_all_tasks_blocked()
        tg.cancel_scope.cancel()
    assert outcome == ["cancelled"]


async def test_timeout_from_move_on_after_propagates_too(tmp_path: Path) -> None:
    host = ToolHost([Scripted("t", sleep_forever)])
    with anyio.move_on_after(0.05) as scope:
        await host.execute("t", b"{}", ctx(tmp_path))
    assert scope.cancelled_caught
