"""The token a browser opens the web view with (``/?token=...``) never
reaches ``kun serve``'s access log."""

from __future__ import annotations

import contextlib
import logging
import socket
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest

from kun.model.scripted import ScriptedModelClient
from kun.server.app import create_app
from kun.server.backend import backend_over
from kun.server.runner import KunServer, server_for

TOKEN = "tok-9f8e7d6c5b4a-secret"


class _Quiet(KunServer):
    ready: anyio.Event

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        self.ready.set()

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@pytest.mark.anyio
async def test_the_token_in_a_page_address_is_not_logged(tmp_path: Path) -> None:
    app = create_app(lambda: backend_over(tmp_path / "home", ScriptedModelClient([])), token=TOKEN)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = _Quiet(server_for(app, "127.0.0.1", port).config, app)
    server.ready = anyio.Event()
    lines = _Lines()
    access = logging.getLogger("uvicorn.access")
    access.addHandler(lines)
    try:
        with sock:
            async with anyio.create_task_group() as tg:
                tg.start_soon(server.serve, [sock])
                with anyio.fail_after(10):
                    await server.ready.wait()
                async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
                    response = await client.get(f"/?token={TOKEN}&x=1")
                assert response.status_code == 303
                server.should_exit = True
    finally:
        access.removeHandler(lines)
    logged = [line for line in lines.lines if "GET /" in line]
    assert logged, lines.lines
    assert all(TOKEN not in line for line in logged), logged
    assert "token=[redacted]&x=1" in logged[0]
