"""``kun serve``'s uvicorn server (:func:`kun.server.runner.server_for`,
with its options) in the test's event loop on 127.0.0.1, over a tmp home
whose turns run on a scripted model; every log record of the run kept."""

from __future__ import annotations

import contextlib
import logging
import socket
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import anyio

from kun.model.scripted import ScriptedModelClient
from kun.server.app import create_app
from kun.server.backend import backend_over
from kun.server.connections import ConnectionLimits
from kun.server.runner import KunServer, server_for

WAIT_SECONDS = 10.0


class _Served(KunServer):
    ready: anyio.Event

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        self.ready.set()

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


@dataclass
class Records(logging.Handler):
    records: list[logging.LogRecord] = field(default_factory=list)
    wake: anyio.Event | None = None

    def __post_init__(self) -> None:
        logging.Handler.__init__(self, logging.DEBUG)

    def __hash__(self) -> int:
        return id(self)

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)
        if self.wake is not None:
            self.wake.set()

    def lines(self) -> list[str]:
        return [record.getMessage() for record in self.records]

    def tracebacks(self) -> list[str]:
        return [r.getMessage() for r in self.records if r.exc_info or r.exc_text]

    async def until(self, found: Callable[[str], bool]) -> list[str]:
        """The lines ``found`` accepts, once there is one."""
        with anyio.fail_after(WAIT_SECONDS):
            while not (lines := [line for line in self.lines() if found(line)]):
                self.wake = anyio.Event()
                await self.wake.wait()
        return lines


@dataclass
class Live:
    host: str
    port: int
    server: KunServer
    records: Records

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def connect(self) -> socket.socket:
        return socket.create_connection((self.host, self.port))


@contextlib.asynccontextmanager
async def live(tmp_path: Path, limits: ConnectionLimits | None = None) -> AsyncIterator[Live]:
    """A server over ``tmp_path / "home"`` with these connection limits."""
    app = create_app(lambda: backend_over(tmp_path / "home", ScriptedModelClient([])))
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = _Served(server_for(app, "127.0.0.1", port, limits=limits).config, app)
    server.ready = anyio.Event()
    records = Records()
    loggers = [
        logging.getLogger(),
        logging.getLogger("uvicorn"),
        logging.getLogger("uvicorn.access"),
    ]
    level = loggers[0].level
    for logger in loggers:
        logger.addHandler(records)
    loggers[0].setLevel(logging.DEBUG)
    try:
        with sock:
            async with anyio.create_task_group() as tg:
                tg.start_soon(server.serve, [sock])
                with anyio.fail_after(WAIT_SECONDS):
                    await server.ready.wait()
                try:
                    yield Live("127.0.0.1", port, server, records)
                finally:
                    server.should_exit = True
    finally:
        loggers[0].setLevel(level)
        for logger in loggers:
            logger.removeHandler(records)
