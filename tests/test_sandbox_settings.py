"""``[tools.bash]`` sandbox settings as configuration gives them: the
values it accepts, kun's home and configuration file hidden from the
tools of a service, and ``kun serve`` turning ``auto`` into ``on``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from kun.app.sandboxing import sandbox_settings, serving
from kun.app.session import tool_host
from kun.config import ConfigError, load_config, parse_config
from kun.config.trust import trust
from kun.tools import ToolContext
from kun.tools.sandbox import SandboxUnavailable, probe


def test_the_sandbox_keys_are_read_and_checked(tmp_path: Path) -> None:
    config = parse_config(
        '[tools.bash]\nsandbox = "on"\nwritable = ["~/.cache", "build"]\nnetwork = true\n',
        str(tmp_path / "kun.toml"),
    )
    settings = sandbox_settings(config, tmp_path / "home")
    assert settings.mode == "on" and settings.network
    assert settings.writable == (Path("~/.cache"), Path("build"))
    assert settings.hidden == (tmp_path / "home", tmp_path / "kun.toml")
    with pytest.raises(ConfigError) as caught:
        parse_config('[tools.bash]\nsandbox = "sometimes"\n', "kun.toml")
    assert "tools.bash.sandbox" in str(caught.value)


def test_serve_turns_auto_into_on_and_keeps_off() -> None:
    auto = parse_config("", "kun.toml")
    assert auto.tools.bash.sandbox == "auto"
    assert serving(auto).tools.bash.sandbox == "on"
    off = parse_config('[tools.bash]\nsandbox = "off"\n', "kun.toml")
    assert serving(off).tools.bash.sandbox == "off"


@pytest.mark.anyio
@pytest.mark.slow
@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
async def test_a_full_auto_command_cannot_read_kuns_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "threads" / "t1").mkdir(parents=True)
    (home / "threads" / "t1" / "events.jsonl").write_text('{"secret": "from-another-thread"}\n')
    workspace = tmp_path / "ws"
    workspace.mkdir()
    host = tool_host(parse_config("", str(tmp_path / "kun.toml")), {}, home=home)
    ctx = ToolContext(
        workspace=workspace, thread_id="t", turn_id="u", call_id="c", approval_policy="full-auto"
    )
    command = msgspec.json.encode({"command": f"cat {home}/threads/t1/events.jsonl"})
    result = await host.execute("bash", command, ctx)
    assert "from-another-thread" not in result.output
    assert "sandbox_denied" in result.output


def test_off_linux_the_refusal_names_linux_and_the_opt_out_not_apt_get() -> None:
    with pytest.raises(SandboxUnavailable) as caught:
        probe(platform="darwin")
    message = str(caught.value)
    assert "apt-get" not in message
    assert "needs Linux's bubblewrap" in message and "this system is darwin" in message
    assert 'sandbox = "off"' in message and "\n" not in message


WIDENING = [
    ('[tools.bash]\nsandbox = "off"\n', "tools.bash.sandbox"),
    ("[tools.bash]\nnetwork = true\n", "tools.bash.network"),
    ('[tools.bash]\nwritable = ["~"]\n', "tools.bash.writable"),
    # an untrusted project's stdio MCP server is refused for its command first
    ('[mcp.gh]\ncommand = "gh-mcp"\nnetwork = true\n', "mcp.gh.command"),
    ('[mcp.gh]\ncommand = "gh-mcp"\nsandbox = "off"\n', "mcp.gh.command"),
]


@pytest.mark.parametrize(("text", "key"), WIDENING)
def test_a_projects_kun_toml_cannot_widen_the_sandbox(tmp_path: Path, text: str, key: str) -> None:
    """A sandboxed command can write ``./kun.toml`` in its workspace: what
    it could plant there must not free the next run."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "kun.toml").write_text(text)
    home, env = tmp_path / "home", {"PATH": os.defpath}
    for where in ({"cwd": workspace}, {"cwd": tmp_path, "workspace": workspace}):
        with pytest.raises(ConfigError) as caught:
            load_config(home=home, environ=env, **where)  # type: ignore[arg-type]
        assert caught.value.key == key and "until you trust it" in str(caught.value)
        assert f"kun trust {workspace / 'kun.toml'}" in str(caught.value)


@pytest.mark.parametrize(("text", "key"), WIDENING)
def test_a_trusted_projects_kun_toml_can_widen_it(tmp_path: Path, text: str, key: str) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "kun.toml").write_text(text)
    home, env = tmp_path / "home", {"PATH": os.defpath}
    trust(home, workspace / "kun.toml")
    assert load_config(home=home, environ=env, cwd=workspace).source == str(workspace / "kun.toml")


@pytest.mark.parametrize(("text", "key"), WIDENING)
def test_kuns_home_or_a_named_file_can_widen_it(tmp_path: Path, text: str, key: str) -> None:
    home, env = tmp_path / "home", {"PATH": os.defpath}
    home.mkdir()
    (home / "kun.toml").write_text(text)
    assert load_config(home=home, cwd=tmp_path, environ=env).source == str(home / "kun.toml")
    named = tmp_path / "ws" / "kun.toml"
    named.parent.mkdir()
    named.write_text(text)
    assert load_config(named, home=home, environ=env).source == str(named)
    assert load_config(home=home, cwd=named.parent, environ={"KUN_CONFIG": str(named)})


def test_a_projects_kun_toml_can_narrow_the_sandbox(tmp_path: Path) -> None:
    (tmp_path / "kun.toml").write_text('[tools.bash]\nsandbox = "on"\nnetwork = false\n')
    config = load_config(home=tmp_path / "home", cwd=tmp_path, environ={})
    assert config.tools.bash.sandbox == "on"


def test_kun_refuses_a_planted_kun_toml_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "kun.toml").write_text('[tools.bash]\nsandbox = "off"\n')
    done = subprocess.run(
        [sys.executable, "-m", "kun", "config", "--home", str(tmp_path / "home")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "KUN_CONFIG": ""},
        check=False,
    )
    assert done.returncode != 0 and done.stdout == ""
    assert done.stderr.startswith("kun: error: ") and done.stderr.count("\n") == 1
    assert "tools.bash.sandbox" in done.stderr
