"""One MCP server: started, initialized and listed once, then called until
kun exits.

The official client (``mcp``) runs each transport in task groups that must be
entered and left by one task, and reports a dying server by raising out of
them. So every server lives in its own supervisor task (:meth:`run`) that
opens the transport and the session, says it is ready, waits to be closed,
and swallows whatever the transport raises: a server that crashes takes
down its own connection, never the turn or the service. Calls go through
the session from any task; a dead server answers every later call with
``mcp_server_crashed`` at once (no restart: a server that crashed once
mid-turn would likely crash again, and a restart loses its state silently).
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Mapping
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any, TextIO

import anyio

from kun.config.schema import McpServerTable

if TYPE_CHECKING:
    from mcp import ClientSession
    from mcp.types import CallToolResult, Tool

_log = logging.getLogger("kun.mcp")
START_SECONDS = 30.0
"""A server gets at least this long to start: a short call timeout must
not fail a server that starts slowly (``npx`` fetching a package)."""


class McpDown(Exception):
    """The server is not connected (it crashed, or never started)."""


class McpConnection:
    """A supervised connection to the server ``name`` of ``table``; values
    of its variables are read from ``environ``."""

    def __init__(self, name: str, table: McpServerTable, environ: Mapping[str, str]) -> None:
        self.name = name
        self.table = table
        self._environ = environ
        self.session: ClientSession | None = None
        self.tools: list[Tool] = []
        self.failure: str | None = None
        self.ready = anyio.Event()
        self._close = anyio.Event()

    @property
    def start_seconds(self) -> float:
        return max(self.table.timeout_seconds, START_SECONDS)

    @property
    def transport(self) -> str:
        return "stdio" if self.table.command is not None else "http"

    async def run(self) -> None:
        """Connect, list the tools, serve until :meth:`close`. Never raises
        but cancellation; a failure is kept in :attr:`failure`."""
        try:
            with anyio.CancelScope() as scope:
                scope.deadline = anyio.current_time() + self.start_seconds
                async with AsyncExitStack() as stack:
                    session = await self._open(stack)
                    await session.initialize()
                    self.tools = await _list_tools(session)
                    self.session = session
                    scope.deadline = math.inf
                    self.ready.set()
                    await self._close.wait()
            if scope.cancelled_caught and not self.ready.is_set():
                self.failure = f"no answer within {self.start_seconds:g} s"
        except Exception as exc:
            if self.ready.is_set():
                self.mark_down(_describe(exc))
            self.failure = self.failure or _describe(exc)
        finally:
            self.session = None
            if not self.ready.is_set() and self.failure is None:
                self.failure = "closed before it was ready"
            self.ready.set()

    def close(self) -> None:
        self._close.set()

    def mark_down(self, why: str) -> None:
        """Called when a call found the connection closed: the server is
        gone, every later call is refused at once."""
        if self.failure is None:
            self.failure = why
            _log.warning("MCP server %r stopped: %s", self.name, why)

    def live_session(self) -> ClientSession:
        if self.failure is not None or self.session is None:
            raise McpDown(self.failure or "not connected")
        return self.session

    async def _open(self, stack: AsyncExitStack) -> ClientSession:
        from mcp import ClientSession

        if self.table.command is not None:
            errlog = stack.enter_context(open(os.devnull, "w"))  # noqa: ASYNC230
            streams = await stack.enter_async_context(self._stdio(self.table.command, errlog))
        else:
            streams = await stack.enter_async_context(await self._http(stack, self.table.url or ""))
        read, write = streams
        return await stack.enter_async_context(ClientSession(read, write))

    def _stdio(self, command: str, errlog: TextIO) -> Any:
        """The server gets the safe basics ``mcp`` passes (``PATH``,
        ``HOME``, ...) and the variables ``env`` names, nothing else of
        kun's environment. Its stderr is discarded: it is not kun's to log,
        and it may print the secrets it was given."""
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
        return streamable_http_client(url, http_client=client)


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
    """One line for a failure, the first leaf of an exception group."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


async def call(conn: McpConnection, tool: str, arguments: dict[str, Any]) -> CallToolResult:
    """``tools/call`` on ``conn``, bounded by its timeout. Raises
    :class:`McpDown`, ``TimeoutError``, ``mcp.MCPError`` or whatever the
    client raised on a malformed answer."""
    session = conn.live_session()
    with anyio.fail_after(conn.table.timeout_seconds):
        return await session.call_tool(tool, arguments)
