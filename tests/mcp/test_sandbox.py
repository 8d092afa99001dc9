"""A stdio MCP server runs in the sandbox when ``[tools.bash] sandbox``
says so (its command wrapped in ``bwrap`` where it is spawned): it has a
PID namespace of its own, so it sees itself as one of the first few
processes, where unsandboxed it is one of the machine's."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import anyio
import pytest

from kun.app.session import open_service
from kun.config import Config
from kun.config.schema import BashSettings, SandboxMode, ToolSettings
from kun.contracts.items import ToolResult
from kun.contracts.threads import ThreadSettings
from kun.model.scripted import ScriptedModelClient, text_reply, tool_reply
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
