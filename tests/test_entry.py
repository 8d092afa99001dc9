"""The composition root: ``kun`` is :func:`kun.entry.main`, and the adapter a
command works through is chosen there once, from ``--server URL`` or
``$KUN_SERVER`` (and ``--token-env VAR``), else the home."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from importlib.metadata import entry_points
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

import kun.entry
from kun.app.connect import LocalTarget, RemoteTarget
from kun.cli.options import home_option
from kun.cli.target import command_target
from kun.entry import cli


def test_the_console_script_is_the_composition_root() -> None:
    (script,) = [point for point in entry_points(group="console_scripts") if point.name == "kun"]
    assert script.value == "kun.entry:main"


@click.command("probe")
@home_option
def _probe(home: Path | None) -> None:
    click.echo(repr(command_target(home)))


@pytest.fixture
def probe(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """A command that prints its target, registered for the test as one
    that can work on a server."""
    for name in ("KUN_SERVER", "KUN_TOKEN", "MY_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("KUN_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(kun.entry, "REMOTE_COMMANDS", kun.entry.REMOTE_COMMANDS | {"probe"})
    cli.add_command(_probe)
    try:
        yield
    finally:
        del cli.commands["probe"]


def _target(*args: str, **env: str) -> str:
    result = CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output.strip()


def test_without_a_server_the_command_works_on_the_home(probe: None, tmp_path: Path) -> None:
    assert _target("probe") == repr(LocalTarget(tmp_path / "home"))


def test_server_on_the_command_line_or_in_the_environment(probe: None) -> None:
    expected = repr(RemoteTarget("http://127.0.0.1:9", "secret", "KUN_TOKEN"))
    assert _target("--server", "127.0.0.1:9/", "probe", KUN_TOKEN="secret") == expected
    assert _target("probe", KUN_SERVER="http://127.0.0.1:9", KUN_TOKEN="secret") == expected


def test_token_env_names_the_variable_holding_the_token(probe: None) -> None:
    shown = _target("--server", "http://h:1", "--token-env", "MY_TOKEN", "probe", MY_TOKEN="t")
    assert shown == repr(RemoteTarget("http://h:1", "t", "MY_TOKEN"))


def test_kun_server_leaves_a_command_that_cannot_use_it_local(tmp_path: Path) -> None:
    """``$KUN_SERVER`` is for the commands that can use it: ``kun config``
    still reads this machine's configuration; ``--server`` given to it is
    one usage line."""
    env = {"KUN_SERVER": "http://127.0.0.1:9", "KUN_HOME": str(tmp_path)}
    result = CliRunner().invoke(cli, ["config"], env=env)
    assert result.exit_code == 0, result.output
    result = CliRunner().invoke(cli, ["--server", "http://127.0.0.1:9", "config"], env=env)
    assert result.exit_code == 1
    assert result.output.startswith("kun: error: --server works with the session and compact,")


def test_a_command_starts_without_loading_what_it_does_not_use() -> None:
    """``kun replay --help`` runs the group's callbacks (its options' too)
    but loads neither the configuration (jsonschema, the tool host) nor
    the server, the runtime or the model layer."""
    script = (
        "import sys\n"
        "from kun.entry import cli\n"
        "try:\n"
        "    cli.main(['replay', '--help'], prog_name='kun')\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = ('kun.config', 'kun.server', 'kun.runtime', 'kun.model', 'kun.tools')\n"
        "print(sorted({m for m in sys.modules if m.startswith(heavy)}), file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stderr.strip() == "[]"


def test_the_session_goes_to_a_server_only_when_told_on_the_command_line(
    tmp_path: Path,
) -> None:
    """``kun --server URL resume`` is the session on that server (without a
    terminal it points at ``kun --server URL run``); ``$KUN_SERVER`` alone
    leaves the session here (which points at plain ``kun run``)."""
    env = {"KUN_HOME": str(tmp_path), "KUN_SERVER": "", "KUN_TOKEN": ""}
    told = CliRunner().invoke(cli, ["--server", "http://127.0.0.1:9", "resume"], env=env)
    assert told.exit_code == 1
    assert "needs a terminal" in told.output
    assert "kun --server http://127.0.0.1:9 run PROMPT" in told.output
    env["KUN_SERVER"] = "http://127.0.0.1:9"
    ambient = CliRunner().invoke(cli, ["resume"], env=env)
    assert ambient.exit_code == 1
    assert "--server" not in ambient.output and "terminal" in ambient.output


def test_the_commands_that_take_a_server_are_registered() -> None:
    """Every name in REMOTE_COMMANDS is a command of the group (a typo
    there would silently leave a command local)."""
    assert kun.entry.REMOTE_COMMANDS <= set(cli.commands)
    assert kun.entry.SESSION_COMMANDS - {None} <= set(cli.commands)
