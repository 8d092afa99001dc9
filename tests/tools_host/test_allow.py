"""Allow rules: the prefix an "always" adds for a bash command, and what it
then covers (never a chained, redirected or substituted command)."""

from __future__ import annotations

import msgspec
import pytest

from kun.contracts.threads import AllowRule
from kun.tools.allow import allows, command_words, describe, rule_for


def _bash(command: str) -> bytes:
    return msgspec.json.encode({"command": command})


@pytest.mark.parametrize(
    ("command", "prefix"),
    [
        ("git status", ("git", "status")),
        ("git status --short", ("git", "status")),
        ("npm test", ("npm", "test")),
        ("uv run pytest -q", ("uv", "run", "pytest")),
        ("npm exec tsc", ("npm", "exec", "tsc")),
        ("python -m pytest tests", ("python", "-m", "pytest")),
        ("python3.11 tools/make_schema.py", ("python3.11", "tools/make_schema.py")),
        ("npx prettier --check .", ("npx", "prettier")),
        ("pytest -q tests/x.py", ("pytest",)),
        ("ls -la", ("ls",)),
        ("'./run tests.sh' a", ("./run tests.sh",)),
    ],
)
def test_a_simple_command_gets_its_prefix(command: str, prefix: tuple[str, ...]) -> None:
    assert rule_for("bash", _bash(command)) == AllowRule(tool="bash", prefix=prefix)


@pytest.mark.parametrize(
    "command",
    [
        "git status; rm -rf x",
        "git status && rm -rf x",
        "git status || rm -rf x",
        "git status | sh",
        "git status & rm -rf x",
        "git status `rm -rf x`",
        "git status $(rm -rf x)",
        "git status $HOME",
        "git status > notes.txt",
        "git status < /dev/null",
        "git status\nrm -rf x",
        "(git status)",
        "{ git status; }",
        "git status 'unclosed",
        "git status \\; rm",
        "PATH=. git status",
        "sudo git status",
        "env git status",
        "bash -c 'git status'",
        "xargs rm",
        "find . -delete",
        "timeout 5 rm -rf x",
        "python -c 'print(1)'",
        "git -C /elsewhere push",
        "git",
        "uv run",
        "",
    ],
)
def test_a_command_a_prefix_cannot_cover_gets_no_rule(command: str) -> None:
    assert rule_for("bash", _bash(command)) is None


def test_a_rule_covers_the_same_prefix_and_nothing_else() -> None:
    rules = (AllowRule(tool="bash", prefix=("git", "status")),)
    assert allows(rules, "bash", _bash("git status")) == rules[0]
    assert allows(rules, "bash", _bash("git  status -s")) == rules[0]
    assert allows(rules, "bash", {"command": "git status --porcelain"}) == rules[0]
    for other in (
        "git push",
        "git statusx",
        "git",
        "rm -rf x",
        "git status; rm -rf x",
        "git status && rm -rf x",
        "git status | tee x",
        "git status $(rm -rf x)",
        "git status `rm -rf x`",
        "git status > x",
        "X=1 git status",
    ):
        assert allows(rules, "bash", _bash(other)) is None, other
    assert allows(rules, "write_file", b"{}") is None


def test_a_tool_rule_covers_every_call_of_that_tool_only() -> None:
    rule = rule_for("write_file", b'{"path": "a.py", "content": "x"}')
    assert rule == AllowRule(tool="write_file")
    assert allows((rule,), "write_file", b'{"path": "b.py", "content": "y"}') == rule
    assert allows((rule,), "edit_file", b'{"path": "b.py"}') is None
    assert allows((rule,), "bash", _bash("ls")) is None


def test_arguments_that_are_not_an_object_are_covered_by_no_prefix() -> None:
    rules = (AllowRule(tool="bash", prefix=("ls",)),)
    assert allows(rules, "bash", b"not json") is None
    assert allows(rules, "bash", b'{"command": 3}') is None
    assert rule_for("bash", b"[]") is None


def test_describe_and_words() -> None:
    assert describe(AllowRule(tool="write_file")) == "write_file"
    assert describe(AllowRule(tool="bash", prefix=("git", "status"))) == "bash `git status …`"
    assert command_words("git commit -m 'a b'") == ["git", "commit", "-m", "a b"]
    assert command_words("a; b") is None
