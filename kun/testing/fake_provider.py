"""A real model provider on 127.0.0.1: a Starlette app served by uvicorn
in-process on an ephemeral port, answering from a script.

``async with FakeProvider(script) as fp:`` binds a socket, serves until the
block ends and always shuts down (gracefully, then by force after
``shutdown_timeout``); point a client at ``fp.base_url``
(``http://127.0.0.1:<port>/v1``). It exists because ``httpx.ASGITransport``
buffers whole responses: streaming, stalls and broken connections are only
real through a socket.

Every ``POST`` takes the next response of the script, in arrival order; a
request past the end gets a 501 with error type ``script_exhausted`` (501 is
never retried, so a short script fails fast). ``GET .../models`` answers a
one-model list (the probe a client may send). Every request is recorded in
:attr:`FakeProvider.requests`: method, path, query, headers, raw body and
the body decoded as JSON.

A script item is a :class:`FakeResponse`, a sequence of chunks (rendered by
:mod:`kun.testing.wire`) or ``bytes`` sent verbatim. The wire format is the
response's, else the provider's, else the request path's suffix
(``chat/completions``, ``responses``, ``messages``, Gemini's
``:streamGenerateContent`` / ``:generateContent``); so is the dialect
(``kimi``: Moonshot's chat completions, reasoning as ``reasoning_content``
deltas and its own usage object).
"""

from __future__ import annotations

import contextlib
import itertools
import re
import socket
from collections import deque
from collections.abc import Generator, Iterable, Iterator, Sequence
from types import TracebackType
from typing import Any, Literal, Self, TypeAlias

import anyio
import msgspec
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from kun.contracts.model import ModelStreamChunk, WireFormat
from kun.testing.wire import Dialect, render_body, render_error, render_stream

__all__ = ["FakeProvider", "FakeResponse", "RecordedRequest", "ScriptItem"]

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    503: "overloaded_error",
    529: "overloaded_error",
}
_EVENT_END = re.compile(rb"\r\n\r\n|\n\n|\r\r")
_SUFFIXES: tuple[tuple[str, WireFormat], ...] = (
    ("/chat/completions", "chat_completions"),
    ("/responses", "responses"),
    ("/messages", "messages"),
    (":streamGenerateContent", "gemini"),
    (":generateContent", "gemini"),
)


class FakeResponse(msgspec.Struct, frozen=True, kw_only=True):
    """One scripted answer and its faults.

    Body (the first that applies): ``status`` >= 400 sends ``body`` or an
    error body in the format's shape; ``raw`` is sent verbatim; ``as_json``
    sends the non-streaming JSON body of ``chunks`` (``application/json``,
    even to a streaming request); else ``chunks`` are streamed as SSE with
    ``crlf``, ``keepalive_every``, ``finish_reason`` and ``done`` passed to
    :func:`~kun.testing.wire.render_stream`.

    Faults, applied to the body bytes whatever they are:

    * ``headers`` added to the response; ``retry_after`` sets ``Retry-After``.
    * ``header_delay``: seconds before the status line (the server thinks).
    * ``pieces``: sizes of successive writes, the last size repeating
      (``(1,)`` sends one byte at a time); each write is its own HTTP chunk,
      which a client reads as one piece. ``per_event``: one write per SSE
      event instead, as a provider flushing every token does.
      ``piece_delay``: seconds between writes.
    * ``stalls``: ``(offset, seconds)`` pairs: after ``offset`` bytes, go
      quiet for ``seconds`` (the connection stays open).
    * ``truncate_at``: stop after that many bytes. ``truncate="close"``
      drops the connection mid-body (the client sees an incomplete chunked
      body); ``"end"`` ends the HTTP body cleanly there, as a relay that
      gives up would.

    ``dialect`` (``kimi``) renders chat completions as Moonshot does.
    """

    chunks: tuple[ModelStreamChunk, ...] = ()
    raw: bytes | None = None
    format: WireFormat | None = None
    status: int = 200
    body: bytes | None = None
    headers: dict[str, str] = {}
    retry_after: str | None = None
    as_json: bool = False
    crlf: bool = False
    keepalive_every: int = 0
    finish_reason: bool = True
    done: bool = True
    header_delay: float = 0.0
    pieces: tuple[int, ...] = ()
    per_event: bool = False
    piece_delay: float = 0.0
    stalls: tuple[tuple[int, float], ...] = ()
    truncate_at: int | None = None
    truncate: Literal["close", "end"] = "close"
    dialect: Dialect | None = None

    def payload(self, format: WireFormat, dialect: Dialect | None = None) -> tuple[bytes, str]:
        """The body bytes and their content type."""
        if self.status >= 400:
            if self.body is not None:
                return self.body, "application/json"
            kind = _ERROR_TYPES.get(self.status, "api_error")
            message = f"fake provider: HTTP {self.status}"
            return render_error(format, message, kind, self.status), "application/json"
        if self.raw is not None:
            return self.raw, "text/event-stream; charset=utf-8"
        if self.as_json:
            return render_body(format, self.chunks, dialect), "application/json"
        body = render_stream(
            format,
            self.chunks,
            crlf=self.crlf,
            keepalive_every=self.keepalive_every,
            finish_reason=self.finish_reason,
            done=self.done,
            dialect=dialect,
        )
        return body, "text/event-stream; charset=utf-8"


ScriptItem: TypeAlias = FakeResponse | Sequence[ModelStreamChunk] | bytes
"""What a script holds: a response with knobs, chunks to stream, raw bytes."""


class RecordedRequest(msgspec.Struct, frozen=True, kw_only=True):
    """A request as the provider received it; header names are lower case."""

    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: bytes
    json: Any = None


class FakeProvider:
    """The server (see the module docstring). ``format`` fixes the wire
    format of every response that does not name its own; ``port`` 0 picks a
    free one; ``cycle`` starts the script over instead of running out (for
    benchmarks and the standalone script); ``record=False`` keeps no
    request (a long benchmark would otherwise hold every body it sent);
    ``dialect="kimi"`` answers chat completions as Moonshot does (its usage
    object, :mod:`kun.testing.wire.kimi`) unless a response names its own."""

    def __init__(
        self,
        script: Iterable[ScriptItem] = (),
        *,
        format: WireFormat | None = None,
        dialect: Dialect | None = None,
        port: int = 0,
        cycle: bool = False,
        shutdown_timeout: float = 5.0,
        record: bool = True,
    ) -> None:
        self.format = format
        self.dialect = dialect
        self.cycle = cycle
        self.record = record
        self.shutdown_timeout = shutdown_timeout
        self.requests: list[RecordedRequest] = []
        self.app = Starlette(routes=[Route("/{path:path}", self._handle, methods=["GET", "POST"])])
        self._script: deque[FakeResponse] = deque()
        self._answered = 0
        self._closing: anyio.Event | None = None
        self._bind_port = port
        self._port: int | None = None
        self._stack: contextlib.AsyncExitStack | None = None
        self._server: _Server | None = None
        self._serve_scope: anyio.CancelScope | None = None
        self.enqueue(*script)

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("the fake provider is not running")
        return self._port

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def enqueue(self, *items: ScriptItem) -> None:
        """Append responses to the script."""
        for item in items:
            if isinstance(item, FakeResponse):
                self._script.append(item)
            elif isinstance(item, bytes):
                self._script.append(FakeResponse(raw=item))
            else:
                self._script.append(FakeResponse(chunks=tuple(item)))

    async def __aenter__(self) -> Self:
        self._closing = anyio.Event()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        async with contextlib.AsyncExitStack() as stack:
            stack.callback(sock.close)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(("127.0.0.1", self._bind_port))
            self._port = sock.getsockname()[1]
            config = uvicorn.Config(
                self.app,
                log_config=None,
                lifespan="off",
                ws="none",
                http="h11",
                timeout_graceful_shutdown=max(int(self.shutdown_timeout) - 1, 1),
            )
            self._server = _Server(config)
            group = await stack.enter_async_context(anyio.create_task_group())
            await group.start(self._run, sock)
            self._stack = stack.pop_all()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        """Stop serving: stalled responses end where they are, connections
        close, the server exits; after ``shutdown_timeout`` it is forced. The
        wait is shielded, so a cancelled test still leaves no server, socket
        or task behind."""
        server, stack, closing = self._server, self._stack, self._closing
        assert server is not None and stack is not None and closing is not None
        closing.set()
        server.should_exit = True
        server.exit.set()
        with anyio.CancelScope(shield=True):
            with anyio.move_on_after(self.shutdown_timeout) as graceful:
                await server.stopped.wait()
            if graceful.cancelled_caught:
                server.force_exit = True
                if self._serve_scope is not None:
                    self._serve_scope.cancel()
        self._port = None
        return await stack.__aexit__(exc_type, exc, tb)

    async def _run(self, sock: socket.socket, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        server = self._server
        assert server is not None
        async with anyio.create_task_group() as group:
            group.start_soon(self._serve, server, sock)
            await server.ready.wait()
            task_status.started()

    async def _serve(self, server: _Server, sock: socket.socket) -> None:
        with anyio.CancelScope(shield=True) as self._serve_scope:
            try:
                await server.serve(sockets=[sock])
            finally:
                server.stopped.set()

    async def _handle(self, request: Request) -> Response:
        body = await request.body()
        if self.record:
            self.requests.append(_recorded(request, body))
        path = request.url.path
        if request.method == "GET":
            if path.endswith("/models"):
                return JSONResponse({"object": "list", "data": [{"id": "fake-model"}]})
            return JSONResponse({"error": {"message": f"no route {path}"}}, status_code=404)
        self._answered += 1
        format = self.format or next((f for s, f in _SUFFIXES if path.endswith(s)), None)
        if not self._script:
            message = f"fake provider: the script has no response for request #{self._answered}"
            error = render_error(format or "chat_completions", message, "script_exhausted")
            return Response(error, status_code=501, media_type="application/json")
        response = self._script.popleft()
        if self.cycle:
            self._script.append(response)
        format = response.format or format
        if format is None:
            message = f"fake provider: cannot tell the wire format of {path}"
            return JSONResponse({"error": {"message": message}}, status_code=404)
        assert self._closing is not None
        dialect = response.dialect or self.dialect
        return _Reply(response, format, self._answered, self._closing, dialect)


def _recorded(request: Request, body: bytes) -> RecordedRequest:
    try:
        decoded = msgspec.json.decode(body) if body else None
    except msgspec.DecodeError:
        decoded = None
    return RecordedRequest(
        method=request.method,
        path=request.url.path,
        query=request.url.query,
        headers=dict(request.headers),
        body=body,
        json=decoded,
    )


class _Reply(Response):
    """Sends one scripted response with its faults; stops at once when the
    client disconnects or the provider closes."""

    def __init__(
        self,
        response: FakeResponse,
        format: WireFormat,
        number: int,
        closing: anyio.Event,
        dialect: Dialect | None = None,
    ) -> None:
        self.response = response
        self.payload, content_type = response.payload(format, dialect)
        self.status_code = response.status
        headers = {"content-type": content_type, "x-request-id": f"req_fake_{number}"}
        if response.retry_after is not None:
            headers["retry-after"] = response.retry_after
        if content_type == "application/json" and response.truncate_at is None:
            headers["content-length"] = str(len(self.payload))
        headers.update({k.lower(): v for k, v in response.headers.items()})
        self.raw_headers = [(k.encode(), v.encode()) for k, v in headers.items()]
        self.closing = closing

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        finished = False
        async with anyio.create_task_group() as group:

            async def watch() -> None:
                while (await receive())["type"] != "http.disconnect":
                    pass
                group.cancel_scope.cancel()

            group.start_soon(watch)
            finished = await self._send(send)
            group.cancel_scope.cancel()
        if finished:
            await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _send(self, send: Send) -> bool:
        """Write the body as scripted. ``False``: leave the response
        incomplete, which drops the connection (``truncate="close"``). A
        provider shutting down ends its responses where they are."""
        response = self.response
        await self._quiet(response.header_delay)
        start_message = {"status": self.status_code, "headers": self.raw_headers}
        await send({"type": "http.response.start", **start_message})
        body = self.payload
        length = len(body) if response.truncate_at is None else min(response.truncate_at, len(body))
        for pause, start, end in _plan(body, length, response):
            if not await self._quiet(pause):
                return True
            if end > start:
                piece = body[start:end]
                await send({"type": "http.response.body", "body": piece, "more_body": True})
        return response.truncate_at is None or response.truncate == "end"

    async def _quiet(self, seconds: float) -> bool:
        """Sleep unless the provider closes first; ``False`` if it did."""
        if seconds > 0:
            with anyio.move_on_after(seconds):
                await self.closing.wait()
        return not self.closing.is_set()


def _plan(body: bytes, length: int, response: FakeResponse) -> Iterator[tuple[float, int, int]]:
    """(pause before, start, end) of every write of the first ``length``
    bytes: cut at every piece boundary and stall offset; a stall at
    ``length`` is a last, empty write."""
    stalls: dict[int, float] = {}
    for offset, seconds in response.stalls:
        if offset <= length:
            stalls[offset] = stalls.get(offset, 0.0) + seconds
    piece_ends: set[int] = set()
    if response.per_event:
        piece_ends = {m.end() for m in _EVENT_END.finditer(body, 0, length)}
    elif response.pieces:
        sizes, position = list(response.pieces), 0
        while position < length:
            position += max(sizes.pop(0) if len(sizes) > 1 else sizes[0], 1)
            piece_ends.add(min(position, length))
    cuts = sorted({0, length} | piece_ends | set(stalls))
    for start, end in itertools.pairwise(cuts):
        pause = stalls.get(start, 0.0) + (response.piece_delay if start in piece_ends else 0.0)
        yield pause, start, end
    if length in stalls and length > 0:
        yield stalls[length], length, length
    elif length == 0 and 0 in stalls:
        yield stalls[0], 0, 0


class _Server(uvicorn.Server):
    """uvicorn with readiness and exit as events, and without its signal
    handlers: the process that embeds the provider owns SIGINT and SIGTERM."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.ready = anyio.Event()
        self.exit = anyio.Event()
        self.stopped = anyio.Event()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        self.ready.set()

    async def main_loop(self) -> None:
        """Wait for :attr:`exit` instead of polling ``should_exit`` every
        0.1 s: a test pays for every provider it starts and stops."""
        await self.on_tick(0)
        await self.exit.wait()

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield
