"""Deadlines and a cap on the connections of ``kun serve``: uvicorn's h11
protocol with what uvicorn has no option for.

uvicorn bounds only the idle time between two requests of a kept-alive
connection (``timeout_keep_alive``). A client that sends a request's
headers, or its body, a byte at a time holds its socket, and a file
descriptor, for ever; and ``limit_concurrency`` answers a plain-text 503
rather than kun's JSON error. So each connection here:

- has :attr:`ConnectionLimits.header_seconds` from when it waits for a
  request (just opened, or its last response sent) to the end of the
  request's headers. Past it, a client that sent part of a request gets a
  408 and the connection is closed; one that sent nothing is closed without
  a word (a browser's speculative connection; uvicorn's keep-alive timer
  closes an idle kept-alive one first);
- has, for the request's body, :attr:`ConnectionLimits.body_seconds` plus
  one second per :data:`MIN_BODY_RATE` bytes received: a body that arrives
  at least that fast never times out (a 32 MiB upload at 16 KiB/s), a
  trickle gets a 408 (the app sees the client leave). Time the server
  itself stops reading (the app not taking the body yet) is not counted;
- that opens with :attr:`ConnectionLimits.max_connections` already open is
  answered, once its headers are in, 503 ``too_many_connections`` (JSON,
  ``Retry-After``, ``Connection: close``), while the open ones go on. Event
  streams count: each holds a socket and a file descriptor like any other.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

import h11
import msgspec
from starlette.types import Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["MIN_BODY_RATE", "ConnectionLimits", "KunH11Protocol", "connection_cap"]

_log = logging.getLogger(__name__)

MIN_BODY_RATE = 16 * 1024
"""Bytes per second a body must keep up, after its first ``body_seconds``."""


@dataclass(frozen=True, kw_only=True)
class ConnectionLimits:
    header_seconds: float = 10.0
    """From waiting for a request to the end of its headers."""
    body_seconds: float = 30.0
    """A body's grace, before :data:`MIN_BODY_RATE` is asked of it."""
    max_connections: int = 1000
    """Open connections (event streams included) before new ones get 503."""


def connection_cap(wanted: int, fd_limit: int) -> int:
    """``wanted``, but at most half the process's file descriptor limit:
    the rest is for logs, locks and the model's connections."""
    return max(1, min(wanted, fd_limit // 2))


def _error(status: int, code: str, message: str) -> bytes:
    return msgspec.json.encode({"error": {"code": code, "message": message}})


_TIMED_OUT = _error(408, "request_timeout", "the request did not arrive in time")
_RAW_408 = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n"
    b"connection: close\r\ncontent-length: %d\r\n\r\n%s" % (len(_TIMED_OUT), _TIMED_OUT)
)
_BUSY = _error(503, "too_many_connections", "the server has too many open connections; retry")


async def _busy(scope: Scope, receive: Receive, send: Send) -> None:
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", b"%d" % len(_BUSY)),
        (b"retry-after", b"1"),
        (b"connection", b"close"),
    ]
    await send({"type": "http.response.start", "status": 503, "headers": headers})
    await send({"type": "http.response.body", "body": _BUSY, "more_body": False})


class KunH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with the deadlines and the cap above; the
    server's :class:`ConnectionLimits` are ``config.kun_limits``."""

    def __init__(self, config: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(config, *args, **kwargs)
        self.limits: ConnectionLimits = getattr(config, "kun_limits", ConnectionLimits())
        self._deadline: asyncio.TimerHandle | None = None
        self._received = 0
        self._body_since = 0.0
        self._body_received = 0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if len(self.connections) > self.limits.max_connections:
            self.app = _busy
            _log.debug("connection over the cap of %d", self.limits.max_connections)
        self._await_headers()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        self._received += len(data)
        waiting_headers = self.conn.their_state is h11.IDLE
        super().data_received(data)
        if self.transport.is_closing():
            return
        state = self.conn.their_state
        if state is h11.SEND_BODY:
            if waiting_headers:
                self._await_body()
            else:
                self._body_received += len(data)
        elif state is not h11.IDLE:  # the whole request is in
            self._stop()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
            self._await_headers()

    # -- the deadlines -------------------------------------------------------------

    def _stop(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _await_headers(self) -> None:
        self._stop()
        self._received = 0
        self._deadline = self.loop.call_later(self.limits.header_seconds, self._headers_late)

    def _headers_late(self) -> None:
        self._deadline = None
        if self.transport.is_closing() or self.conn.their_state is not h11.IDLE:
            return
        if self._received:
            _log.info(
                "closed a connection from %s: its request headers came too slowly", self._who()
            )
            self.transport.write(_RAW_408)
        self.transport.close()

    def _await_body(self) -> None:
        self._stop()
        self._body_since = self.loop.time()
        self._body_received = 0
        self._deadline = self.loop.call_later(self.limits.body_seconds, self._body_check)

    def _body_check(self) -> None:
        self._deadline = None
        if self.transport.is_closing() or self.conn.their_state is not h11.SEND_BODY:
            return
        if self.flow.read_paused:  # the server is not reading: not the client's time
            self._await_body()
            return
        allowed = self.limits.body_seconds + self._body_received / MIN_BODY_RATE
        elapsed = self.loop.time() - self._body_since
        if elapsed < allowed:
            self._deadline = self.loop.call_later(allowed - elapsed, self._body_check)
            return
        _log.info("closed a connection from %s: its request body came too slowly", self._who())
        cycle = self.cycle
        if cycle is not None and not cycle.response_started:
            self.transport.write(_RAW_408)
        if cycle is not None:
            cycle.disconnected = True
            cycle.message_event.set()
        self.transport.close()

    def _who(self) -> str:
        return f"{self.client[0]}:{self.client[1]}" if self.client else "a client"
