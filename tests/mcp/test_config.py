"""``[mcp.<name>]`` in kun.toml: what is accepted, one readable line for
what is not, what ``kun config`` shows, which values are secrets, and that
MCP tools never join a parallel read-only batch."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import msgspec
import pytest
from click.testing import CliRunner

from kun.config import ConfigError, parse_config
from kun.config.schema import McpServerTable
from kun.contracts.items import ToolCall
from kun.entry import cli
from kun.mcp import secret_values
from kun.runtime.dispatch import plan_batches

GOOD = b"""
[mcp.demo]
command = "python"
args = ["server.py"]
env = ["DEMO_TOKEN"]

[mcp.web]
url = "https://mcp.example.com/mcp"
headers_env = { Authorization = "WEB_AUTH" }
approval = "read"
timeout_seconds = 5
enabled = false
"""


def test_servers_are_read_with_their_defaults() -> None:
    config = parse_config(GOOD, "kun.toml")
    demo, web = config.mcp["demo"], config.mcp["web"]
    assert (demo.command, demo.args, demo.env) == ("python", ("server.py",), ("DEMO_TOKEN",))
    assert (demo.approval, demo.timeout_seconds, demo.enabled) == ("exec", 60.0, True)
    assert (web.url, dict(web.headers_env), web.approval) == (
        "https://mcp.example.com/mcp",
        {"Authorization": "WEB_AUTH"},
        "read",
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[mcp.demo]\nargs = ["x"]\n', "mcp.demo: expected either command (stdio) or url"),
        ('[mcp.demo]\ncommand = "x"\nurl = "http://a"\n', "mcp.demo: expected either"),
        ('[mcp.demo]\nurl = "http://a"\nenv = ["X"]\n', "mcp.demo.env: expected none with url"),
        (
            '[mcp.demo]\ncommand = "x"\nheaders_env = {A = "B"}\n',
            "mcp.demo.headers_env: expected none with command",
        ),
        ('[mcp.demo]\ncommand = "x"\napproval = "maybe"\n', "mcp.demo.approval: expected one of"),
        ('[mcp.demo]\ncommand = "x"\ntimeout_seconds = 0\n', "mcp.demo.timeout_seconds"),
        ('[mcp.demo]\ncommand = "x"\nenv = ["NOT A NAME"]\n', "mcp.demo.env[0]"),
        ('[mcp.demo]\ncommand = "x"\nfoo = 1\n', "mcp.demo.foo: unknown key"),
        ('[mcp.demo]\ncommand = "x"\ntoken = "abc123"\n', "mcp.demo.token: an API key is never"),
        ('[mcp.a__b]\ncommand = "x"\n', "mcp.a__b: expected a server name"),
        ('[mcp.demo]\nurl = "https://u:p@h/mcp"\n', "mcp.demo.url: expected no credentials"),
    ],
)
def test_a_bad_table_is_one_line_naming_the_key(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(text, "kun.toml")
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_a_bad_table_is_one_line_and_a_non_zero_exit_in_the_cli(tmp_path: Path) -> None:
    (tmp_path / "kun.toml").write_text('[mcp.demo]\ncommand = "x"\nurl = "http://a"\n')
    result = CliRunner().invoke(cli, ["config", "--config", str(tmp_path / "kun.toml")])
    assert result.exit_code != 0
    assert "mcp.demo" in result.output and "Traceback" not in result.output


def test_kun_config_shows_servers_and_variable_names_never_values(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "kun.toml").write_bytes(GOOD)
    monkeypatch.setenv("DEMO_TOKEN", "demo-secret-value-123")
    args = ["config", "--config", str(tmp_path / "kun.toml"), "--home", str(tmp_path)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert "[mcp.demo]" in result.output and "[mcp.web]" in result.output
    assert "$DEMO_TOKEN is set" in result.output and "$WEB_AUTH is NOT set" in result.output
    assert "transport: streamable HTTP" in result.output
    assert "demo-secret-value-123" not in result.output


def test_secret_values_are_those_of_enabled_servers() -> None:
    servers = {
        "a": McpServerTable(command="x", env=("A_TOKEN", "UNSET")),
        "b": McpServerTable(url="http://h/mcp", headers_env={"Authorization": "B_AUTH"}),
        "off": McpServerTable(command="x", env=("OFF_TOKEN",), enabled=False),
    }
    environ = {"A_TOKEN": "aaaa1111", "B_AUTH": "Bearer bbbb", "OFF_TOKEN": "zzzz9999"}
    assert secret_values(servers, environ) == {"aaaa1111", "Bearer bbbb", "bbbb"}


def _call(name: str, index: int) -> ToolCall:
    return ToolCall(
        id=f"i{index}",
        call_id=f"c{index}",
        name=name,
        arguments=msgspec.Raw(b"{}"),
    )


def test_mcp_tools_never_join_a_parallel_batch_even_as_read() -> None:
    run: Any = SimpleNamespace(policy="full-auto", link=None, delegation=None)
    names = ["read_file", "demo__read_file", "grep", "demo__echo", "demo__echo", "glob"]
    batches = plan_batches(run, [_call(n, i) for i, n in enumerate(names)])
    assert [[c.name for c in b] for b in batches] == [
        ["read_file"],
        ["demo__read_file"],
        ["grep"],
        ["demo__echo"],
        ["demo__echo"],
        ["glob"],
    ]


def test_kun_config_shows_each_servers_sandbox_switches(tmp_path: Path) -> None:
    config = tmp_path / "kun.toml"
    config.write_text(
        '[tools.bash]\nnetwork = false\n\n[mcp.gh]\ncommand = "gh-mcp"\nnetwork = true\n\n'
        '[mcp.local]\ncommand = "local-mcp"\nsandbox = "off"\n\n'
        '[mcp.web]\nurl = "https://mcp.example.com/mcp"\n'
    )
    args = ["config", "--config", str(config), "--home", str(tmp_path / "home")]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    tables = {
        block.split("]")[0]: block
        for block in result.output.split("\n[")
        if block.startswith("mcp.")
    }
    rows = {
        name: {line.split(" = ")[0]: " ".join(line.split()) for line in block.splitlines()}
        for name, block in tables.items()
    }
    assert rows["mcp.gh"]["network"] == f"network = true # {config}"
    assert (
        rows["mcp.gh"]["sandbox"]
        == 'sandbox = "inherit" # default: as [tools.bash] sandbox = "auto"'
    )
    assert rows["mcp.local"]["sandbox"] == f'sandbox = "off" # {config}'
    assert rows["mcp.local"]["network"] == "network = false # default: as [tools.bash] network"
    assert "sandbox" not in rows["mcp.web"]


def test_the_sandbox_switches_are_for_stdio_servers(tmp_path: Path) -> None:
    for key in ('sandbox = "on"', "network = true"):
        with pytest.raises(ConfigError) as caught:
            parse_config(f'[mcp.web]\nurl = "https://mcp.example.com/mcp"\n{key}\n', "kun.toml")
        assert caught.value.key == f"mcp.web.{key.split()[0]}"
