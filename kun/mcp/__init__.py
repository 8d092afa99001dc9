"""MCP tool servers: the tools of the servers ``kun.toml`` declares
(``[mcp.<name>]``, :class:`~kun.config.schema.McpServerTable`), offered to
the model next to the built-ins.

When: every enabled server is started (stdio) or reached (streamable
HTTP) when a service that runs turns opens (:func:`kun.app.session.open_service`,
so ``kun run``, ``kun chat`` and ``kun serve`` alike), all at once, each
within its ``timeout_seconds``; its tools are listed once and the
connection is reused by every turn of the process, then closed when kun
exits. A server whose last tool list is cached for the same table
(:mod:`kun.mcp.listcache`) is not waited for: it is offered with that list
and starts beside the first model request. A server that fails to start is
a warning and its tools are absent (from the next step, for one offered
from the cache); the thread runs without them. A server that drops later (its process dies,
its HTTP server restarts) is connected again by the next call of one of its
tools (:mod:`kun.mcp.connection`). A server that announces
``notifications/tools/list_changed`` is listed again before the next step
(:meth:`McpServers.refresh`, asked by :meth:`kun.tools.host.ToolHost.refresh`):
the tools a request offers change between steps only, and an unchanged
list is sent byte for byte as before (the provider's prefix cache holds).
Images its tools return are attachments of the result (:mod:`kun.mcp.media`).

What the model sees: ``<server>__<tool>`` with the server's own
description and JSON Schema, validated by the host like a built-in's
(:mod:`kun.tools.host`). What the approval policy sees: the server's
``approval`` effect, ``exec`` by default. MCP tools never join a parallel
read-only batch (their names always hold ``__``, which no built-in's does;
:data:`kun.runtime.dispatch.READ_ONLY_BUILTINS`).

Sandbox: a stdio server runs under ``bwrap`` when the service asks
(``sandboxes``, a :class:`~kun.tools.sandbox.SandboxPolicy` per server, as
:func:`kun.app.sandboxing.server_sandboxes` decides): its command is
wrapped where it is declared, so it starts, and restarts, sandboxed. Where
``bwrap`` cannot start, the server does not either (a warning, as for any
server that fails to start), never unsandboxed.

Secrets: ``env`` and ``headers_env`` name variables; their values go to the
server only and are scrubbed from every result (:func:`secret_values`,
added to the host's redactor).

The ``mcp`` package is imported only when a server is configured, so
commands that run no turn (``kun --help``, ``kun replay``) never load it.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import msgspec

from kun.config.schema import McpServerTable
from kun.mcp.listcache import ToolListCache
from kun.tools.base import Tool
from kun.tools.sandbox import SandboxPolicy, SandboxUnavailable, bwrap_argv, probe

if TYPE_CHECKING:
    from kun.mcp.connection import McpConnection

__all__ = ["McpServers", "open_mcp_tools", "secret_values"]

_log = logging.getLogger("kun.mcp")
_CLOSE_SECONDS = 10.0


@dataclass
class McpServers:
    """The servers of one service: their tools, and how each one fared
    (``None``: connected)."""

    tools: tuple[Tool, ...] = ()
    failures: dict[str, str | None] = field(default_factory=dict)
    connections: list[McpConnection] = field(default_factory=list)
    """The servers that started: only their tools are offered."""
    media: Path | None = None
    """Where the images their tools return are kept (:mod:`kun.mcp.media`)."""
    cache: ToolListCache = field(default_factory=lambda: ToolListCache(None))
    _seen: tuple[tuple[str, int], ...] = ()

    async def refresh(self) -> tuple[Tool, ...] | None:
        """The servers' tools, when a list changed since the last call
        (a server announced ``notifications/tools/list_changed``, was
        listed again when it reconnected, or gave its first list after
        starting from the cache; one that did not start is dropped);
        ``None`` when none did, without asking any server. Never raises
        but cancellation."""
        for conn in [c for c in self.connections if c.ready.is_set() and not c.connects]:
            self.connections.remove(conn)
            self.failures[conn.name] = conn.failure
            _did_not_start(conn)
        for conn in self.connections:
            await conn.relist()
        seen = tuple((conn.name, conn.listings) for conn in self.connections)
        if seen == self._seen:
            return None
        self._seen = seen
        self.keep_lists()
        self.tools = _adapt_all(self.connections, self.media)
        return self.tools

    def keep_lists(self) -> None:
        """Cache each list a server gave (:mod:`kun.mcp.listcache`), for
        the next command; on close too, as a short turn may end before a
        server offered from the cache had given its own."""
        for conn in self.connections:
            if conn.listings:
                self.cache.save(conn.name, conn.table, conn.tools)


def _did_not_start(conn: McpConnection) -> None:
    _log.warning("MCP server %r did not start, its tools are absent: %s", conn.name, conn.failure)


def _adapt_all(conns: list[McpConnection], media: Path | None) -> tuple[Tool, ...]:
    from kun.mcp.tools import adapt

    taken: set[str] = set()
    return tuple(tool for conn in conns for tool in adapt(conn, taken, media))


def enabled(servers: Mapping[str, McpServerTable]) -> dict[str, McpServerTable]:
    return {name: table for name, table in servers.items() if table.enabled}


def secret_values(servers: Mapping[str, McpServerTable], environ: Mapping[str, str]) -> set[str]:
    """The values of every variable an enabled server's ``env`` or
    ``headers_env`` names: what a tool result must never show. A header
    value's credential is a secret on its own too (the token of
    ``Bearer <token>``), as a server may echo it without its scheme."""
    tables = enabled(servers).values()
    values = {environ.get(name) for table in tables for name in table.env}
    headers = {environ.get(name) for table in tables for name in table.headers_env.values()}
    values |= {v.split()[-1] for v in headers if v and len(v.split()) == 2}
    return {v for v in values | headers if v}


@asynccontextmanager
async def open_mcp_tools(
    servers: Mapping[str, McpServerTable],
    environ: Mapping[str, str],
    media: Path | None = None,
    cache_home: Path | None = None,
    *,
    sandboxes: Mapping[str, SandboxPolicy] | None = None,
) -> AsyncIterator[McpServers]:
    """Connect the enabled ``servers`` and yield their tools; close them on
    exit. Never raises for a server's sake: a failure is logged and kept in
    :attr:`McpServers.failures`. The images their tools return are kept
    under ``media`` and attached to the results (without it: a line naming
    each). ``cache_home``: where their tool lists are cached
    (:mod:`kun.mcp.listcache`; ``None``: not cached, every server waited
    for). The stdio servers named in ``sandboxes`` run in their sandbox
    (their lists are cached under the wrapped command)."""
    wanted = enabled(servers)
    if not wanted:
        yield McpServers()
        return
    from kun.mcp.connection import McpConnection

    if sandboxes:
        wanted = await _sandboxed(wanted, sandboxes)
    cache = ToolListCache(cache_home)
    conns = [
        McpConnection(name, table, environ, cached=cache.load(name, table))
        for name, table in sorted(wanted.items())
    ]
    async with anyio.create_task_group() as tg:
        for conn in conns:
            tg.start_soon(conn.run)
        for conn in conns:
            if not conn.cached:
                await conn.ready.wait()
        result = McpServers(media=media, cache=cache)
        for conn in conns:
            if conn.ready.is_set() and conn.failure is not None:
                result.failures[conn.name] = conn.failure
                _did_not_start(conn)
                continue
            result.failures[conn.name] = None
            result.connections.append(conn)
        await result.refresh()
        try:
            yield result
        finally:
            result.keep_lists()
            for conn in conns:
                conn.close()
            tg.cancel_scope.deadline = anyio.current_time() + _CLOSE_SECONDS


async def _sandboxed(
    servers: dict[str, McpServerTable], sandboxes: Mapping[str, SandboxPolicy]
) -> dict[str, McpServerTable]:
    """The commands of the stdio servers in ``sandboxes`` wrapped in
    ``bwrap`` (each in its own); without a ``bwrap`` that starts, a command
    that fails saying why (so the server fails to start, with that reason,
    as any other). The others as they are."""
    try:
        bwrap: str | None = await anyio.to_thread.run_sync(probe)
        problem = ""
    except SandboxUnavailable as exc:
        bwrap, problem = None, str(exc)
    refusal = ["/bin/sh", "-c", 'echo "kun: error: $1" >&2; exit 1', "kun-sandbox", problem]

    def wrap(name: str) -> Callable[[list[str]], list[str]]:
        sandbox = sandboxes[name]
        if bwrap is None:
            return lambda _: refusal
        return lambda argv: bwrap_argv(bwrap, sandbox, argv)

    return {
        name: _wrapped(table, wrap(name)) if name in sandboxes else table
        for name, table in servers.items()
    }


def _wrapped(table: McpServerTable, wrap: Callable[[list[str]], list[str]]) -> McpServerTable:
    if table.command is None:
        return table
    argv = wrap([table.command, *table.args])
    return msgspec.structs.replace(table, command=argv[0], args=tuple(argv[1:]))
