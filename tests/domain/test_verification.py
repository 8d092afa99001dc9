"""The verification suggestion: only an unverified source change draws it."""

from __future__ import annotations

from collections.abc import Callable

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kun.contracts.items import AssistantText, Item, ToolCall, ToolResult
from kun.domain.verification import is_check_command, needs_verification

_n = 0


def call(name: str, *, error: bool = False, result: bool = True, **args: str) -> list[Item]:
    global _n
    _n += 1
    cid = f"c{_n}"
    items: list[Item] = [
        ToolCall(
            id=f"i{_n}", call_id=cid, name=name, arguments=msgspec.Raw(msgspec.json.encode(args))
        )
    ]
    if result:
        items.append(ToolResult(id=f"r{_n}", call_id=cid, name=name, output="", is_error=error))
    return items


def write(path: str, **kw: bool) -> list[Item]:
    return call("write_file", path=path, content="x", **kw)


def bash(command: str) -> list[Item]:
    return call("bash", command=command)


@pytest.mark.parametrize(
    "path",
    ["a.py", "src/b.ts", "c.tsx", "d.js", "e.jsx", "f.mjs", "g.cts", "h.mts", "I.PY"],
)
def test_a_source_change_without_a_check_asks_for_one(path: str) -> None:
    assert needs_verification(write(path))
    assert needs_verification(call("edit_file", path=path, old_string="a", new_string="b"))


@pytest.mark.parametrize(
    "path", ["README.md", "index.html", "notes.txt", "a.json", "b.pyc", "x.tss"]
)
def test_other_files_never_ask(path: str) -> None:
    assert not needs_verification(write(path))


def test_a_failed_or_unfinished_change_does_not_count() -> None:
    assert not needs_verification(write("a.py", error=True))
    assert not needs_verification(write("a.py", result=False))


def test_a_check_after_the_change_settles_it_and_a_later_change_reopens_it() -> None:
    items = [*write("a.py"), *bash("python -m pytest -q")]
    assert not needs_verification(items)
    assert needs_verification([*items, AssistantText(id="t", text="done"), *write("b.ts")])
    assert not needs_verification([*write("a.py"), *call("verify_changes")])


def test_a_check_before_the_change_does_not_count() -> None:
    assert needs_verification([*bash("ruff check ."), *write("a.py")])


@pytest.mark.parametrize(
    "command",
    [
        "pytest",
        "uv run pytest tests/x.py",
        "cd web && npm test",
        "npm run lint",
        "pnpm typecheck",
        "npx tsc --noEmit",
        "ruff check kun && mypy --strict kun",
        "cargo test",
        "go vet ./...",
        "make check",
        ".venv/bin/pytest -q",
    ],
)
def test_check_commands(command: str) -> None:
    assert is_check_command(command)


@pytest.mark.parametrize(
    "command",
    ["ls", "cat pytest.ini", "echo hi", "git commit -m 'run tests'", "npm install", "make"],
)
def test_not_check_commands(command: str) -> None:
    assert not is_check_command(command)


def _forward(items: list[Item]) -> bool:
    """The rule as stated: the index of the last successful source change
    is after the index of the last check."""
    ok = {i.call_id for i in items if isinstance(i, ToolResult) and not i.is_error}
    calls = [i for i in items if isinstance(i, ToolCall)]
    change = max((n for n, c in enumerate(calls) if c.call_id in ok and _source(c)), default=-1)
    check = max((n for n, c in enumerate(calls) if _check(c)), default=-1)
    return change > check


def _source(call: ToolCall) -> bool:
    return call.name == "write_file" and msgspec.json.decode(call.arguments)["path"].endswith(".py")


def _check(call: ToolCall) -> bool:
    return call.name == "bash" and msgspec.json.decode(call.arguments)["command"] == "pytest"


_steps = st.sampled_from(
    [
        lambda: write("a.py"),
        lambda: write("a.md"),
        lambda: write("b.py", error=True),
        lambda: write("c.py", result=False),
        lambda: bash("pytest"),
        lambda: bash("ls"),
    ]
)


@given(st.lists(_steps, max_size=12))
def test_reading_from_the_end_agrees_with_the_rule(steps: list[Callable[[], list[Item]]]) -> None:
    items = [item for step in steps for item in step()]
    assert needs_verification(items) == _forward(items)
