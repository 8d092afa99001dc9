"""The ``[mcp.<name>]`` tables as ``kun config`` prints them: each value
with where it came from, variables by name with whether they are set,
never a value."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import msgspec

from kun.config.schema import BashSettings, McpServerTable

__all__ = ["config_lines"]

_DEFAULTED = ("approval", "timeout_seconds", "enabled")


def config_lines(
    servers: Mapping[str, McpServerTable],
    raw: Mapping[str, Any],
    source: str,
    environ: Mapping[str, str],
    bash: BashSettings | None = None,
) -> list[str]:
    """``key = value  # source`` lines, a table per server; ``raw`` is the
    file's ``[mcp]`` table as written (to tell a default from a value);
    ``bash``, ``[tools.bash]``, what a stdio server's sandbox inherits."""
    lines: list[str] = []
    for name, table in servers.items():
        written = raw.get(name, {})
        lines += ["", f"[mcp.{name}]", *_server(table, written, source, environ)]
        if table.command is not None:
            lines += _sandbox(table, written, source, bash or BashSettings())
    return lines


def _sandbox(
    table: McpServerTable, written: Mapping[str, Any], source: str, bash: BashSettings
) -> Iterator[str]:
    """The server's sandbox switches; an inherited one says what it is."""
    if "sandbox" in written:
        yield f"sandbox = {_json(table.sandbox)}  # {source}"
    else:
        yield f'sandbox = "inherit"  # default: as [tools.bash] sandbox = {_json(bash.sandbox)}'
    if table.network is not None:
        yield f"network = {_json(table.network)}  # {source}"
    else:
        yield f"network = {_json(bash.network)}  # default: as [tools.bash] network"


def _server(
    table: McpServerTable, written: Mapping[str, Any], source: str, environ: Mapping[str, str]
) -> Iterator[str]:
    if table.command is not None:
        yield f"command = {_json(table.command)}  # {source}; transport: stdio"
        if table.args:
            yield f"args = {_json(list(table.args))}  # {source}"
        if table.env:
            yield f"env = {_json(list(table.env))}  # {source}; {_states(table.env, environ)}"
    else:
        yield f"url = {_json(table.url)}  # {source}; transport: streamable HTTP"
        for header, variable in table.headers_env.items():
            state = _states((variable,), environ)
            yield f"headers_env.{header} = {_json(variable)}  # {source}; {state}"
    for key in _DEFAULTED:
        value = getattr(table, key)
        shown = ("true" if value else "false") if isinstance(value, bool) else _json(value)
        yield f"{key} = {shown}  # {source if key in written else 'default'}"


def _states(names: tuple[str, ...], environ: Mapping[str, str]) -> str:
    parts = [f"${n} is {'set' if environ.get(n) else 'NOT set'}" for n in names]
    return f"{', '.join(parts)}, values not shown"


def _json(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return msgspec.json.encode(value).decode()
