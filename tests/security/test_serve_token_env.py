"""``kun serve --token-env VAR`` takes the token out of kun's environment:
the commands the model runs inherit that environment, and a variable with
an innocent name (``KUN_SERVE_BEARER``) is not withheld by its name."""

from __future__ import annotations

import os

import pytest
from click.testing import CliRunner

import kun.cli.serve as serve_module
from kun.entry import cli
from kun.model.redact import Redactor
from kun.tools import environment
from kun.tools.environment import ToolEnvironment

VAR = "KUN_SERVE_BEARER"
TOKEN = "a-long-server-token-0123456789"


def test_the_token_leaves_the_environment_commands_inherit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: dict[str, object] = {}

    def run(host: str, port: int, token: str | None, *_: object) -> None:
        seen["token"] = token
        seen["command_env"] = ToolEnvironment().command_env()
        seen["environ"] = dict(os.environ)

    monkeypatch.setenv(VAR, TOKEN)
    monkeypatch.setattr(serve_module, "_run", run)
    result = CliRunner().invoke(cli, ["serve", "--port", "0", "--token-env", VAR])
    assert result.exit_code == 0, result.output
    assert seen["token"] == TOKEN
    assert VAR not in seen["command_env"]  # type: ignore[operator]
    assert TOKEN not in repr(seen["environ"])


def test_the_token_is_scrubbed_from_tool_results_though_no_variable_holds_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A command can still read the token from ``/proc/<kun's pid>/environ``
    (the process's initial environment block); its output must not carry it."""
    seen: dict[str, tuple[str, ...]] = {}

    def run(host: str, port: int, token: str | None, *_: object) -> None:
        seen["secrets"] = ToolEnvironment().secret_values()

    monkeypatch.setattr(environment, "_held", set())
    monkeypatch.setenv(VAR, TOKEN)
    monkeypatch.setattr(serve_module, "_run", run)
    result = CliRunner().invoke(cli, ["serve", "--port", "0", "--token-env", VAR])
    assert result.exit_code == 0, result.output
    assert TOKEN in seen["secrets"]
    assert Redactor(sorted(seen["secrets"])).scrub(f"x={TOKEN}\n") != f"x={TOKEN}\n"
