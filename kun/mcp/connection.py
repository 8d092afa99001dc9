"""One MCP server: started, initialized and listed, then called until kun
exits; reconnected when it drops.

The official client (``mcp``) runs each transport in task groups that must be
entered and left by one task, and reports a dying server by raising out of
them. So every server lives in its own supervisor task (:meth:`run`) that
opens the transport and the session, says it is ready, serves until the
connection is lost or kun closes it, and swallows whatever the transport
raises: a server that crashes takes down its own connection, never the turn
or the service.

A lost connection (a stdio process that died, an HTTP server that
restarted) is noticed when its stream ends or a call finds it closed. The
next call to one of its tools asks the supervisor to connect again, once,
after a short backoff that doubles with each failed attempt; after
:data:`MAX_RECONNECTS` failed attempts in a row the server stays down and
every later call is refused at once. A call that was in flight when the
connection closed is never sent again: it may have had its effects
(:mod:`kun.mcp.tools` reports it as ``mcp_unknown_after_disconnect``).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any, TextIO

import anyio
from anyio.abc import ObjectReceiveStream, ObjectSendStream

from kun.config.schema import McpServerTable
from kun.mcp.stderr_tail import StderrTail
from kun.model.redact import redact_url

if TYPE_CHECKING:
    from mcp import ClientSession
    from mcp.types import CallToolResult, Tool

_log = logging.getLogger("kun.mcp")
START_SECONDS = 30.0
"""A server gets at least this long to start: a short call timeout must
not fail a server that starts slowly (``npx`` fetching a package)."""
MAX_RECONNECTS = 3
"""Failed reconnects in a row after which a server is left down."""
BACKOFF_SECONDS = 0.25
"""The wait between losing a server and connecting again, doubled after
each failed attempt: a restarting HTTP server gets a moment to listen."""


class McpDown(Exception):
    """The server is not connected (it crashed, or never started)."""


class McpConnection:
    """A supervised connection to the server ``name`` of ``table``; values
    of its variables are read from ``environ``."""

    def __init__(
        self,
        name: str,
        table: McpServerTable,
        environ: Mapping[str, str],
        cached: list[Tool] | None = None,
    ) -> None:
        self.name = name
        self.table = table
        self._environ = environ
        self.cached = cached is not None
        """Offered from the list it gave last time while it starts
        (:mod:`kun.mcp.listcache`)."""
        self.session: ClientSession | None = None
        self.stderr: StderrTail | None = None
        """A stdio server's stderr, for what its failures say."""
        self.tools: list[Tool] = cached or []
        self.failure: str | None = None
        self.ready = anyio.Event()
        self.connects = 0
        """Successful connections so far (1 once started; more after reconnects)."""
        self.listings = 0
        """How many times :attr:`tools` was read from the server: a change
        tells :class:`~kun.mcp.McpServers` to adapt them again."""
        self.stale = False
        """The server announced that its tool list changed."""
        self._closing = False
        self._lost = anyio.Event()
        self._lost_at = -math.inf
        self._failed_reconnects = 0
        self._forgotten = False
        self._lock = anyio.Lock()
        self._starting = anyio.CancelScope()
        self._asks, self._requests = anyio.create_memory_object_stream[anyio.Event](math.inf)

    @property
    def start_seconds(self) -> float:
        return max(self.table.timeout_seconds, START_SECONDS)

    @property
    def transport(self) -> str:
        return "stdio" if self.table.command is not None else "http"

    async def run(self) -> None:
        """Connect and serve; when the connection is lost, wait for a call
        to ask for another one (:meth:`live_session`); stop at
        :meth:`close`. Never raises but cancellation; the last failure is
        kept in :attr:`failure`."""
        answer = self.ready
        try:
            with self._starting:
                await self._serve(answer)
            answer.set()
            while not self._closing:
                answer = await self._requests.receive()
                await self._serve(answer)
                answer.set()
        except anyio.EndOfStream:
            pass
        finally:
            self.session = None
            self._requests.close()
            if not self.ready.is_set():
                self.failure = self.failure or "closed before it was ready"
            self.ready.set()
            answer.set()

    async def _serve(self, answer: anyio.Event) -> None:
        """One connection, from start to loss; ``answer`` is set once it
        is ready to be called."""
        self._lost = lost = anyio.Event()
        self.failure, self._forgotten = None, False
        connected = False
        try:
            with anyio.CancelScope() as scope:
                scope.deadline = anyio.current_time() + self.start_seconds
                async with AsyncExitStack() as stack:
                    session = await self._open(stack, lost)
                    await session.initialize()
                    self.tools, self.stale = await _list_tools(session), False
                    self.listings += 1
                    scope.deadline = math.inf
                    connected, self.session = True, session
                    self.connects += 1
                    answer.set()
                    await lost.wait()
            if scope.cancelled_caught and not connected:
                self.failure = f"no answer within {self.start_seconds:g} s"
        except Exception as exc:
            self.failure = self.failure or _describe(exc)
        finally:
            self.session = None
        if self.failure is not None and self.stderr is not None:
            self.failure = self.stderr.explain(self.failure)
        if connected and not self._closing:
            self.mark_down(self.failure or "its connection closed")
            _log.warning("MCP server %r stopped: %s", self.name, self.failure)

    async def relist(self) -> None:
        """Read the tool list again after the server announced a change;
        on failure the old list stays (a warning). A server that is down
        is listed when it reconnects."""
        session = self.session
        if not self.stale or session is None:
            return
        self.stale = False
        try:
            with anyio.fail_after(self.table.timeout_seconds):
                tools = await _list_tools(session)
        except Exception as exc:
            _log.warning("MCP server %r: its new tool list could not be read: %s",
                         self.name, _describe(exc))  # fmt: skip
            return
        self.tools = tools
        self.listings += 1

    async def _on_message(self, message: Any) -> None:
        """The session's notifications: ``notifications/tools/list_changed``
        marks the list stale (it is read between steps, not here: this runs
        on the session's reading task)."""
        from mcp.types import ToolListChangedNotification

        if isinstance(message, ToolListChangedNotification):
            self.stale = True

    def close(self) -> None:
        """Stop serving; a server still starting (offered from the cache,
        and never called) is abandoned at once rather than waited for."""
        self._closing = True
        self._lost.set()
        self._asks.close()
        if not self.ready.is_set():
            self._starting.cancel()

    def mark_down(self, why: str, session: ClientSession | None = None) -> None:
        """The connection is lost (its stream ended, or a call found it
        closed): calls are refused until a reconnect. ``session``: the one
        the caller found closed; a newer one is left alone."""
        if session is not None and session is not self.session:
            return
        self.failure = self.failure or why
        self.session = None
        self._lost_at = anyio.current_time()
        self._lost.set()

    @property
    def given_up(self) -> bool:
        """No call will try to connect again."""
        return self._closing or self._failed_reconnects >= MAX_RECONNECTS

    async def live_session(self) -> ClientSession:
        """The connected session; a lost server is connected again first
        (one attempt, after the backoff). Raises :class:`McpDown` when it
        cannot be. A call made while the server is still starting (its
        tools were offered from the cache) waits for the start; a server
        that never started is down."""
        if not self.ready.is_set():
            await self.ready.wait()
        if self.session is not None:
            return self.session
        if self.connects == 0:
            raise McpDown(f"it did not start: {self.failure or 'no reason given'}")
        async with self._lock:
            if (session := self._connected()) is not None:
                return session
            if self.given_up:
                raise McpDown(self.failure or "not connected")
            wait = BACKOFF_SECONDS * 2**self._failed_reconnects
            await anyio.sleep(max(0.0, self._lost_at + wait - anyio.current_time()))
            answer = anyio.Event()
            try:
                self._asks.send_nowait(answer)
            except anyio.ClosedResourceError:
                raise McpDown(self.failure or "closed") from None
            await answer.wait()
            if (session := self._connected()) is None:
                self._failed_reconnects += 1
                self._lost_at = anyio.current_time()
                raise McpDown(f"reconnecting failed: {self.failure or 'not connected'}")
            self._failed_reconnects = 0
            _log.warning("MCP server %r reconnected", self.name)
            return session

    def _connected(self) -> ClientSession | None:
        """The session now (a method, so a check after an ``await`` reads
        it again)."""
        return self.session

    async def _open(self, stack: AsyncExitStack, lost: anyio.Event) -> ClientSession:
        """The transport and the session over it. The session reads through
        a relay that marks the connection lost when the transport's stream
        ends (a stdio server's output closes when it dies)."""
        from mcp import ClientSession

        if self.table.command is not None:
            errlog = await self._stderr_pipe(stack)
            streams = await stack.enter_async_context(self._stdio(self.table.command, errlog))
            errlog.close()
        else:
            streams = await stack.enter_async_context(await self._http(stack, self.table.url or ""))
        read, write = streams
        relay_in, relay_out = anyio.create_memory_object_stream[Any](0)
        stack.callback(relay_out.close)
        stack.callback(relay_in.close)
        relays = await stack.enter_async_context(anyio.create_task_group())
        stack.callback(relays.cancel_scope.cancel)
        relays.start_soon(self._relay, read, relay_in, lost)
        session = ClientSession(relay_out, write, message_handler=self._on_message)
        return await stack.enter_async_context(session)

    async def _stderr_pipe(self, stack: AsyncExitStack) -> TextIO:
        """The file a stdio server's stderr goes to: a pipe read until the
        server closes it, whose last lines explain a failure
        (:mod:`kun.mcp.stderr_tail`)."""
        secrets = (v for n in self.table.env if (v := self._environ.get(n)))
        tail = self.stderr = StderrTail(secrets)
        read, errlog = tail.pipe()
        stack.callback(errlog.close)
        readers = await stack.enter_async_context(anyio.create_task_group())
        stack.callback(readers.cancel_scope.cancel)
        readers.start_soon(tail.drain, read)
        return errlog

    async def _relay(
        self, source: ObjectReceiveStream[Any], sink: ObjectSendStream[Any], lost: anyio.Event
    ) -> None:
        try:
            async with sink:
                async for item in source:
                    await sink.send(item)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass
        if not lost.is_set() and not self._closing:
            self.session = None
            lost.set()

    def _stdio(self, command: str, errlog: TextIO) -> Any:
        """The server gets the safe basics ``mcp`` passes (``PATH``,
        ``HOME``, ...) and the variables ``env`` names, nothing else of
        kun's environment. Its stderr goes to ``errlog``: it is not kun's
        to log, only the last lines of a failure, redacted."""
        from mcp.client.stdio import StdioServerParameters, stdio_client

        env = {n: v for n in self.table.env if (v := self._variable(n)) is not None}
        params = StdioServerParameters(command=command, args=list(self.table.args), env=env)
        return stdio_client(params, errlog=errlog)

    def _variable(self, name: str) -> str | None:
        value = self._environ.get(name)
        if value is None:
            _log.warning("MCP server %r: environment variable %s is not set", self.name, name)
        return value

    async def _http(self, stack: AsyncExitStack, url: str) -> Any:
        """The headers of ``headers_env`` on every request; the HTTP client
        is closed with the connection (``mcp`` leaves a client it was given
        open)."""
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        headers = {
            header: value
            for header, var in self.table.headers_env.items()
            if (value := self._variable(var)) is not None
        }
        client = await stack.enter_async_context(create_mcp_http_client(headers=headers))
        client.event_hooks["response"].append(self._watch_session)
        return streamable_http_client(url, http_client=client)

    async def _watch_session(self, response: Any) -> None:
        """A 404 to a request that carried a session id: the server no
        longer knows the session (it restarted) and refused the request
        unread. The MCP spec says to start a new session."""
        if response.status_code == 404 and "mcp-session-id" in response.request.headers:
            self._forgotten = True

    def forgot(self, session: ClientSession) -> bool:
        """The server refused a request of ``session`` because it no longer
        knows it: that request did not run."""
        return self._forgotten and session is self.session


async def _list_tools(session: ClientSession) -> list[Tool]:
    from mcp.types import PaginatedRequestParams

    tools: list[Tool] = []
    cursor: str | None = None
    while True:
        params = PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await session.list_tools(params=params)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            return tools


def _describe(exc: BaseException) -> str:
    """One line for a failure, the first leaf of an exception group, with a
    secret-looking query value of a URL it quotes redacted (httpx names the
    server's ``url``, which may carry ``?api_key=``)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = redact_url(str(exc).strip().splitlines()[0]) if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


async def call(conn: McpConnection, tool: str, arguments: dict[str, Any]) -> CallToolResult:
    """``tools/call`` on ``conn``, bounded by its timeout. A call the
    server refused because it forgot the session (an HTTP server that
    restarted) never ran: it is sent once more over a new session. Raises
    :class:`McpDown`, ``TimeoutError``, ``mcp.MCPError`` or whatever the
    client raised on a malformed answer."""
    from mcp import MCPError
    from mcp_types import INVALID_REQUEST

    session = await conn.live_session()
    try:
        return await _call_once(conn, session, tool, arguments)
    except MCPError as exc:
        if exc.code != INVALID_REQUEST or not conn.forgot(session):
            raise
    conn.mark_down("it no longer knows kun's session (it restarted)", session)
    return await _call_once(conn, await conn.live_session(), tool, arguments)


async def _call_once(
    conn: McpConnection, session: ClientSession, tool: str, arguments: dict[str, Any]
) -> CallToolResult:
    from mcp import MCPError
    from mcp_types import CONNECTION_CLOSED

    try:
        with anyio.fail_after(conn.table.timeout_seconds):
            return await session.call_tool(tool, arguments)
    except MCPError as exc:
        if exc.code == CONNECTION_CLOSED:
            conn.mark_down("its connection closed", session)
        raise
