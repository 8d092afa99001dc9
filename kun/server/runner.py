"""Serving the app with uvicorn, as ``kun serve`` does.

uvicorn's graceful shutdown closes the listening socket and then waits for
every open connection to finish before the app's lifespan ends; an event
stream never finishes on its own. So the server here begins the app's
shutdown first (:func:`~kun.server.app.begin_shutdown`: streams are told
to end, running turns are interrupted and recorded as aborted), then lets
uvicorn wait, bounded by ``GRACE_SECONDS``. It also tells the app when
the socket is bound, which starts orphan reconciliation, and exits 0
after a stop by SIGINT or SIGTERM (uvicorn would raise the signal again).

Connections get deadlines and a cap (:mod:`kun.server.connections`), and
running out of file descriptors is logged once, not per failed accept
(:mod:`kun.server.accept_errors`).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import resource
import socket
import sys
from collections.abc import Iterator

import uvicorn
from starlette.applications import Starlette

from kun.model.redact import redact_url
from kun.server.accept_errors import AcceptErrors
from kun.server.app import begin_shutdown
from kun.server.connections import ConnectionLimits, KunH11Protocol, connection_cap
from kun.server.fdlimit import raise_fd_limit
from kun.store.lock import set_holder

__all__ = ["GRACE_SECONDS", "KunServer", "RedactedAccess", "serve"]

GRACE_SECONDS = 10


class KunServer(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, app: Starlette) -> None:
        super().__init__(config)
        self.kun_app = app
        self.accept_errors = AcceptErrors()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        self.accept_errors.install(asyncio.get_running_loop())
        await super().startup(sockets=sockets)
        if self.started:
            set_holder("kun serve", self._base_url())  # named in the threads it locks
        listening = getattr(self.kun_app.state, "listening", None)
        if self.started and listening is not None:
            listening.set()
        if self.started:
            self._say_where()

    def _base_url(self) -> str:
        """Where this server answers (the port it bound, when asked for 0)."""
        config = self.config
        host = f"[{config.host}]" if ":" in config.host else config.host
        port = config.port
        for server in getattr(self, "servers", ()):
            for sock in server.sockets:
                port = port or sock.getsockname()[1]
        return f"http://{host}:{port}"

    def _say_where(self) -> None:
        """One line a person can act on: where the web view is (the API is
        under ``/v1``), and how a browser gets in when a token is needed."""
        config = self.config
        host = f"[{config.host}]" if ":" in config.host else config.host
        base = f"http://{host}:{config.port}/"
        token = getattr(self.kun_app.state, "token_required", False)
        how = " (open it once with ?token=<your token>)" if token else ""
        print(f"kun serve: the web view is at {base}{how}; the API under {base}v1", file=sys.stderr)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        await begin_shutdown(self.kun_app)
        try:
            await super().shutdown(sockets=sockets)
        finally:
            set_holder("")

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        """uvicorn's handlers, without raising the signal again once the
        server has stopped: a graceful stop exits 0."""
        with super().capture_signals():
            yield
            self._captured_signals.clear()


def server_for(
    app: Starlette,
    host: str,
    port: int,
    *,
    log_level: str = "info",
    limits: ConnectionLimits | None = None,
) -> KunServer:
    """The server ``kun serve`` runs; ``limits``: the connections' deadlines
    and cap (the cap at most half the file descriptor limit)."""
    wanted = limits or ConnectionLimits()
    fd_limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    cap = connection_cap(wanted.max_connections, fd_limit)
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        http=KunH11Protocol,
        lifespan="on",
        log_level=log_level,
        timeout_graceful_shutdown=GRACE_SECONDS,
    )
    setattr(config, "kun_limits", dataclasses.replace(wanted, max_connections=cap))  # noqa: B010
    access = logging.getLogger("uvicorn.access")
    if not any(isinstance(f, RedactedAccess) for f in access.filters):
        access.addFilter(RedactedAccess())
    return KunServer(config, app)


class RedactedAccess(logging.Filter):
    """uvicorn's access line quotes the path with its query, and a browser
    opens the web view once with ``?token=<token>``: secret-looking query
    values leave the line as ``[redacted]`` (:func:`~kun.model.redact.redact_url`)."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) >= 3 and isinstance(args[2], str):
            record.args = (*args[:2], redact_url(args[2]), *args[3:])
        return True


def serve(app: Starlette, host: str, port: int, limits: ConnectionLimits | None = None) -> None:
    """Serve until SIGINT or SIGTERM, then stop gracefully."""
    raise_fd_limit()  # before the cap reads the limit
    server_for(app, host, port, limits=limits).run()
