"""A stdio MCP server runs in the sandbox when ``[tools.bash] sandbox``
says so (its command wrapped in ``bwrap`` where it is spawned): it has a
PID namespace of its own, so it sees itself as one of the first few
processes, where unsandboxed it is one of the machine's. ``[mcp.NAME]
sandbox`` and ``network`` set one server's sandbox apart from ``bash``'s."""

from __future__ import annotations

import shutil
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from kun.app.sandboxing import sandbox_settings, server_sandboxes
from kun.app.session import open_service
from kun.config import Config
from kun.config.schema import BashSettings, McpServerTable, SandboxMode, ToolSettings
from kun.contracts.items import ToolResult
from kun.contracts.threads import ThreadSettings
from kun.model.scripted import ScriptedModelClient, text_reply, tool_reply
from kun.tools.sandbox import SandboxSettings
from tests.mcp.support import stdio_demo

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed"),
]


async def server_pid(tmp_path: Path, mode: SandboxMode, **service: Any) -> int:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    model = ScriptedModelClient([tool_reply("demo__pid", {}, call_id="c1"), text_reply("ok")])
    config = Config(
        source="test",
        mcp={"demo": stdio_demo()},
        tools=ToolSettings(bash=BashSettings(sandbox=mode)),
    )
    async with open_service(tmp_path / "home", model, config=config, **service) as service_:
        settings = ThreadSettings(workspace=str(workspace), approval_policy="full-auto")
        thread_id = await service_.create_thread(settings)
        turn_id = await service_.start_turn(thread_id, "go")
        with anyio.fail_after(20):
            turn = await service_.wait_turn(thread_id, turn_id)
    (result,) = [i for i in turn.items if isinstance(i, ToolResult) and i.call_id == "c1"]
    return int(result.output)


async def test_an_mcp_server_runs_sandboxed_when_the_sandbox_is_on(tmp_path: Path) -> None:
    assert await server_pid(tmp_path, "on") < 10
    assert await server_pid(tmp_path, "off") > 10


async def test_auto_sandboxes_the_servers_of_a_full_auto_process(tmp_path: Path) -> None:
    assert await server_pid(tmp_path, "auto", approval="full-auto") < 10
    assert await server_pid(tmp_path, "auto", approval="on-request") > 10


async def call(tmp_path: Path, tool: str, args: dict[str, Any], **fields: Any) -> str:
    """The result of the demo server's ``tool`` in a ``full-auto`` service
    whose ``bash`` is sandboxed, the network off, the server's
    ``[mcp.demo]`` with ``fields``."""
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    model = ScriptedModelClient([tool_reply(f"demo__{tool}", args, call_id="c1"), text_reply("ok")])
    config = Config(
        source="test",
        mcp={"demo": stdio_demo(**fields)},
        tools=ToolSettings(bash=BashSettings(sandbox="on")),
    )
    async with open_service(tmp_path / "home", model, config=config) as service:
        settings = ThreadSettings(workspace=str(workspace), approval_policy="full-auto")
        thread_id = await service.create_thread(settings)
        turn_id = await service.start_turn(thread_id, "go")
        with anyio.fail_after(20):
            turn = await service.wait_turn(thread_id, turn_id)
    (result,) = [i for i in turn.items if isinstance(i, ToolResult) and i.call_id == "c1"]
    return result.output


@pytest.fixture
def listener() -> Iterator[int]:
    with socket.create_server(("127.0.0.1", 0)) as server:
        yield server.getsockname()[1]


async def test_a_server_gets_the_network_of_its_own_table(tmp_path: Path, listener: int) -> None:
    """``[mcp.NAME] network = true``: a server that needs the network has
    it, and ``bash`` (network off) still has not."""
    args = {"port": listener}
    assert (await call(tmp_path, "connect", args)).startswith("refused")
    assert await call(tmp_path, "connect", args, network=True) == "connected"
    assert int(await call(tmp_path, "pid", {}, network=True)) < 10  # still sandboxed


async def test_one_server_can_run_unsandboxed_while_bash_stays_sandboxed(tmp_path: Path) -> None:
    assert int(await call(tmp_path, "pid", {}, sandbox="off")) > 10
    settings = sandbox_settings(
        Config(source="test", tools=ToolSettings(bash=BashSettings(sandbox="on"))), None
    )
    assert settings.wanted("full-auto") and settings.wanted("on-request")


def test_each_server_has_the_sandbox_its_table_says(tmp_path: Path) -> None:
    servers = {
        "inherit": stdio_demo(),
        "on": stdio_demo(sandbox="on"),
        "off": stdio_demo(sandbox="off"),
        "net": stdio_demo(network=True),
        "http": McpServerTable(url="http://127.0.0.1:9/mcp"),
    }
    auto = SandboxSettings(mode="auto")
    asked = server_sandboxes(auto, servers, tmp_path, "on-request")
    assert set(asked) == {"on"}
    unasked = server_sandboxes(auto, servers, tmp_path, "full-auto")
    assert set(unasked) == {"inherit", "on", "net"}
    assert unasked["net"].network and not unasked["inherit"].network
    closed = server_sandboxes(
        SandboxSettings(mode="on", network=True), {"s": stdio_demo(network=False)}, tmp_path, None
    )
    assert not closed["s"].network
