"""``kun run`` with ``[mcp.*]`` in kun.toml: the model calls an MCP tool
through a real provider connection, a server that cannot start is one
warning line, and the command exits cleanly (the servers closed)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from kun.contracts.model import CompletedChunk, TextDeltaChunk
from kun.model.scripted import tool_reply
from kun.testing.fake_provider import FakeProvider, FakeResponse
from tests.mcp.support import DEMO

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def _config(tmp_path: Path, base_url: str) -> Path:
    config = tmp_path / "kun.toml"
    config.write_text(
        'default_provider = "fake"\n\n[providers.fake]\n'
        f'base_url = "{base_url}"\nendpoint_format = "chat_completions"\n'
        'default_model = "fake-model"\n\n'
        f'[mcp.demo]\ncommand = "{sys.executable}"\nargs = ["{DEMO}"]\n'
        'approval = "read"\n\n'
        f'[mcp.gone]\ncommand = "{tmp_path / "no-such-server"}"\n'
    )
    return config


async def test_kun_run_calls_an_mcp_tool(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    answer = FakeResponse(chunks=(TextDeltaChunk(text="it said hi"), CompletedChunk()))
    script = [FakeResponse(chunks=tuple(tool_reply("demo__echo", {"text": "hi"}))), answer]
    async with FakeProvider(script, format="chat_completions") as provider:
        environ = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        with anyio.fail_after(60):
            result = await anyio.run_process(
                [sys.executable, "-m", "kun", "run", "echo hi",
                 "--config", str(_config(tmp_path, provider.base_url)),
                 "--home", str(tmp_path / "home"), "--workspace", str(workspace)],
                check=False, env=environ, stdin=subprocess.DEVNULL, start_new_session=True,
            )  # fmt: skip
        sent = [t["function"]["name"] for t in provider.requests[0].json["tools"]]
    out, err = result.stdout.decode(), result.stderr.decode()
    assert result.returncode == 0, err
    assert "demo__echo" in sent and not any(n.startswith("gone__") for n in sent)
    assert "-> demo__echo" in out and "it said hi" in out
    assert "MCP server 'gone' did not start" in err
