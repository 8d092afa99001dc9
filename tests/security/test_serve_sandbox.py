"""The server's token out of the model's reach, against a real ``kun serve``
process: its ``/proc/<pid>/environ`` never holds the token, and a command
the model runs through it (sandboxed by default) sees neither the server's
``/proc`` nor a route to its port; with ``sandbox = "off"`` the same
command sees both, and only the token stays out of the environ."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx
import pytest
from anyio.abc import Process

from kun.contracts.model import CompletedChunk, TextDeltaChunk
from kun.model.scripted import tool_reply
from kun.testing.fake_provider import FakeProvider, FakeResponse

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed"),
]

VAR = "KUN_SERVE_BEARER"
TOKEN = "a-long-server-token-0123456789-abcdef"
PLANTED = "KUN_PLANTED_MARKER=visible-to-a-reader"
DONE = FakeResponse(chunks=(TextDeltaChunk(text="done"), CompletedChunk(stop_reason="stop")))
PROBE = (
    "pid=$(cat serve.pid); port=$(cat serve.port); "
    'if tr "\\0" "\\n" < /proc/$pid/environ > environ.seen 2>/dev/null; '
    "then echo ENVIRON=readable; else echo ENVIRON=unreadable; fi; "
    "if (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null; "
    "then echo PORT=open; else echo PORT=closed; fi"
)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@asynccontextmanager
async def _serve(
    tmp_path: Path, base_url: str, sandbox: str | None
) -> AsyncIterator[tuple[Process, httpx.AsyncClient]]:
    port = _free_port()
    config = tmp_path / "kun.toml"
    config.write_text(
        'default_provider = "fake"\n\n[providers.fake]\n'
        f'base_url = "{base_url}"\nendpoint_format = "chat_completions"\n'
        'default_model = "fake-model"\n'
        + (f'\n[tools.bash]\nsandbox = "{sandbox}"\n' if sandbox else "")
    )
    command = [
        sys.executable, "-m", "kun", "serve", "--port", str(port), "--token-env", VAR,
        "--config", str(config), "--home", str(tmp_path / "home"),
    ]  # fmt: skip
    name, value = PLANTED.split("=")
    environ = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    environ.update({VAR: TOKEN, name: value})
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with (tmp_path / "serve.out").open("wb") as out:
        process = await anyio.open_process(
            command, env=environ, cwd=tmp_path, stdin=subprocess.DEVNULL,
            stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    async with process, httpx.AsyncClient(base_url=url, headers=headers) as client:
        try:
            with anyio.fail_after(20):
                while True:
                    try:
                        await client.get("/v1/threads")
                        break
                    except httpx.TransportError:
                        assert process.returncode is None, (tmp_path / "serve.out").read_text()
                        await anyio.sleep(0.05)
            yield process, client
        finally:
            if process.returncode is None:
                process.kill()


def _note_server(workspace: Path, pid: int, port: int | None) -> bytes:
    """Leave the server's pid and port where the probe reads them; the
    server's environ as any process of the user reads it."""
    (workspace / "serve.pid").write_text(str(pid))
    (workspace / "serve.port").write_text(str(port))
    return Path(f"/proc/{pid}/environ").read_bytes()


async def _probe_through_a_turn(tmp_path: Path, sandbox: str | None) -> tuple[str, bytes, Path]:
    """Run :data:`PROBE` as the model's bash call in a server; what it
    printed, the server's environ as read from outside, and the workspace."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    script = [FakeResponse(chunks=tuple(tool_reply("bash", {"command": PROBE}))), DONE]
    async with FakeProvider(script, format="chat_completions") as provider:
        async with _serve(tmp_path, provider.base_url, sandbox) as (process, client):
            environ = _note_server(workspace, process.pid, client.base_url.port)
            created = await client.post(
                "/v1/threads", json={"workspace": str(workspace), "approval_policy": "full-auto"}
            )
            thread = created.json()["thread_id"]
            started = await client.post(f"/v1/threads/{thread}/turns", json={"text": "probe"})
            turn_url = f"/v1/threads/{thread}/turns/{started.json()['turn_id']}"
            with anyio.fail_after(30):
                while True:
                    if (await client.get(turn_url)).json()["status"] not in ("queued", "running"):
                        break
                    await anyio.sleep(0.05)
    result = provider.requests[1].json["messages"][-1]["content"]
    return str(result), environ, workspace


async def test_the_token_is_not_in_the_servers_environ(tmp_path: Path) -> None:
    _, environ, _ = await _probe_through_a_turn(tmp_path, None)
    assert TOKEN.encode() not in environ
    assert f"{VAR}=".encode() not in environ
    assert PLANTED.encode() in environ  # the rest of the block is intact


async def test_a_sandboxed_command_cannot_read_the_servers_proc_nor_reach_its_port(
    tmp_path: Path,
) -> None:
    printed, _, workspace = await _probe_through_a_turn(tmp_path, None)
    assert "ENVIRON=unreadable" in printed
    assert "PORT=closed" in printed
    seen = workspace / "environ.seen"
    assert not seen.exists() or not seen.read_text()


async def test_with_the_sandbox_off_the_same_command_reaches_both(tmp_path: Path) -> None:
    printed, _, workspace = await _probe_through_a_turn(tmp_path, "off")
    assert "ENVIRON=readable" in printed
    assert "PORT=open" in printed
    seen = (workspace / "environ.seen").read_text()
    assert PLANTED in seen
    assert TOKEN not in seen


async def test_serve_refuses_to_start_without_a_bwrap_that_starts(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "kun-python").symlink_to(sys.executable)
    environ = {**os.environ, "PATH": str(bin_dir)}
    with anyio.fail_after(20):
        refused = await anyio.run_process(
            [sys.executable, "-m", "kun", "serve", "--port", "0", "--home", str(tmp_path / "home")],
            env=environ,
            check=False,
        )
    stderr = refused.stderr.decode()
    assert refused.returncode == 2
    assert stderr.count("\n") == 1 and stderr.startswith("kun: error: ")
    assert "apt-get install bubblewrap" in stderr and 'sandbox = "off"' in stderr
