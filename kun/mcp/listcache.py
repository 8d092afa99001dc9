"""The last tool list each MCP server gave, so a command need not wait for
the server to start before its first model request.

Starting a server (``npx`` fetching a package, a Python server importing
its SDK) takes seconds, and the first request needs the tool list. A server
whose list is here, for exactly the same ``[mcp.<name>]`` table, is offered
with that list at once while it starts beside the first request; the list
it then gives replaces the cached one from the next step on (a request's
tools change between steps only), and is written here for the next
command. A server that then fails to start loses its tools at the next step,
and a call made before is answered ``mcp_server_crashed`` (it did not run).

One disposable JSON file per home, ``<home>/mcp-tools.json``: a server's
entry is kept only with the key of the table it was listed for (a changed
command, argument, variable name or URL lists again), is written by
replacing the file whole, and anything unreadable is ignored (the server is
waited for, as without a cache). It holds what the servers said about their
tools, nothing of kun's secrets.
"""

from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from kun.config.schema import McpServerTable

if TYPE_CHECKING:
    from mcp.types import Tool

__all__ = ["CACHE_NAME", "ToolListCache"]

CACHE_NAME = "mcp-tools.json"
_log = logging.getLogger("kun.mcp")


class _Entry(msgspec.Struct, frozen=True):
    key: str
    tools: list[dict[str, Any]]


def table_key(table: McpServerTable) -> str:
    """What the list depends on: the server's whole table."""
    return hashlib.sha256(msgspec.json.encode(table)).hexdigest()


class ToolListCache:
    """The cache of one home (``None`` home: nothing is kept)."""

    def __init__(self, home: Path | None) -> None:
        self._path = home / CACHE_NAME if home is not None else None

    def load(self, name: str, table: McpServerTable) -> list[Tool] | None:
        """The list ``name`` gave for ``table`` last time, if kept."""
        from mcp.types import Tool

        entry = self._read().get(name)
        if entry is None or entry.key != table_key(table):
            return None
        try:
            return [Tool.model_validate(tool) for tool in entry.tools]
        except ValueError:
            return None

    def save(self, name: str, table: McpServerTable, tools: list[Tool]) -> None:
        """Keep ``tools`` as ``name``'s list for ``table``; a failure to
        write is a debug note (the cache only saves time)."""
        if self._path is None:
            return
        entries = self._read()
        dumped = [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in tools]
        entry = _Entry(table_key(table), dumped)
        if entries.get(name) == entry:
            return
        entries[name] = entry
        temporary = self._path.with_name(f".{CACHE_NAME}.{os.getpid()}")
        try:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            temporary.write_bytes(msgspec.json.encode(entries))
            temporary.replace(self._path)
        except OSError as exc:
            _log.debug("MCP tool lists not cached: %s", exc)
            temporary.unlink(missing_ok=True)

    def _read(self) -> dict[str, _Entry]:
        if self._path is None:
            return {}
        try:
            return msgspec.json.decode(self._path.read_bytes(), type=dict[str, _Entry])
        except (OSError, msgspec.DecodeError):
            return {}
