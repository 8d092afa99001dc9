"""``[tools.bash]`` sandbox settings as configuration gives them: the
values it accepts, kun's home and configuration file hidden from the
tools of a service, and ``kun serve`` turning ``auto`` into ``on``."""

from __future__ import annotations

import shutil
from pathlib import Path

import msgspec
import pytest

from kun.app.sandboxing import sandbox_settings, serving
from kun.app.session import tool_host
from kun.config import ConfigError, parse_config
from kun.tools import ToolContext


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
