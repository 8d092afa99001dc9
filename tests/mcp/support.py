"""A service with the demo MCP server configured and a scripted model."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from kun.app.session import open_service
from kun.config import Config
from kun.config.schema import McpServerTable
from kun.contracts.items import ToolResult
from kun.contracts.threads import ApprovalPolicy, ThreadSettings
from kun.domain.state import TurnState
from kun.model.scripted import ScriptedModelClient
from kun.runtime.service import TurnService

DEMO = Path(__file__).parent / "servers" / "demo.py"
ONCE = Path(__file__).parent / "servers" / "once.py"


def stdio_demo(**fields: Any) -> McpServerTable:
    return McpServerTable(command=sys.executable, args=(str(DEMO),), **fields)


@dataclass
class Run:
    service: TurnService
    model: ScriptedModelClient
    home: Path
    thread_id: str

    async def turn(self, text: str = "go") -> TurnState:
        turn_id = await self.service.start_turn(self.thread_id, text)
        with anyio.fail_after(20):
            return await self.service.wait_turn(self.thread_id, turn_id)

    def results(self, turn: TurnState) -> dict[str, ToolResult]:
        return {i.call_id: i for i in turn.items if isinstance(i, ToolResult)}

    def log(self) -> str:
        return b"".join(p.read_bytes() for p in self.home.rglob("events.jsonl")).decode()


@asynccontextmanager
async def mcp_run(
    tmp_path: Path,
    script: list[Any],
    servers: Mapping[str, McpServerTable],
    *,
    policy: ApprovalPolicy = "full-auto",
) -> AsyncIterator[Run]:
    """``open_service`` as ``kun run`` opens it, with ``servers`` as the
    ``[mcp]`` tables of its configuration."""
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    model = ScriptedModelClient(script)
    config = Config(source="test", mcp=dict(servers))
    async with open_service(tmp_path / "home", model, config=config) as service:
        settings = ThreadSettings(workspace=str(workspace), approval_policy=policy)
        thread_id = await service.create_thread(settings)
        yield Run(service, model, tmp_path / "home", thread_id)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def http_demo(env: Mapping[str, str], port: int | None = None) -> Iterator[str]:
    """The demo server over streamable HTTP on 127.0.0.1 (on ``port``, else
    a free one); its URL."""
    port = port or free_port()
    proc = subprocess.Popen(
        [sys.executable, str(DEMO), "http", str(port)],
        env=dict(env),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError("the demo HTTP server did not start") from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
