"""An MCP server's tools as kun tools: ``<server>__<tool>``, its input
schema as the parameters the host validates, and every way a call can go
wrong as a result the model can read.

Failures of the server itself are recoverable tool errors, never a dead
turn (SPEC §6.3, layer 1):

* ``mcp_timeout``: no answer within the server's ``timeout_seconds``.
* ``mcp_unknown_after_disconnect``: the connection closed while the call
  was in flight (the process died, the HTTP server went away). The call
  may have had its effects, so it is never sent again by kun; the next call
  of that server's tools reconnects (:mod:`kun.mcp.connection`).
* ``mcp_server_crashed``: the server is down and reconnecting failed (or
  was given up); the call did not run.
* ``mcp_bad_response``: an answer that is not a valid ``tools/call`` result.
* ``mcp_error``: the server answered the request with a JSON-RPC error.
* ``mcp_tool_error``: the tool ran and reported an error (``isError``).
"""

from __future__ import annotations

import base64
import binascii
import logging
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import msgspec
from jsonschema import Draft202012Validator  # type: ignore[import-untyped,unused-ignore]
from jsonschema.exceptions import SchemaError  # type: ignore[import-untyped,unused-ignore]

from kun.contracts.items import Attachment
from kun.contracts.model import ToolSpec
from kun.mcp.connection import McpConnection, McpDown, call
from kun.mcp.media import save_images
from kun.tools.base import ToolContext, ToolEffect, ToolOutput

if TYPE_CHECKING:
    from mcp.types import CallToolResult, Tool

MCP_TIMEOUT = "mcp_timeout"
MCP_SERVER_CRASHED = "mcp_server_crashed"
MCP_UNKNOWN_AFTER_DISCONNECT = "mcp_unknown_after_disconnect"
MCP_BAD_RESPONSE = "mcp_bad_response"
MCP_ERROR = "mcp_error"
MCP_TOOL_ERROR = "mcp_tool_error"

SEPARATOR = "__"
MAX_OUTPUT_CHARS = 64 * 1024
"""A result longer than this is cut (with a note), like ``read_file``'s."""

_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""What every provider accepts as a function name."""
_log = logging.getLogger("kun.mcp")


class McpTool:
    """One tool of one server, as the host runs it."""

    def __init__(
        self,
        conn: McpConnection,
        tool: Tool,
        name: str,
        schema: dict[str, Any],
        media: Path | None = None,
    ) -> None:
        self._conn = conn
        self._media = media
        self._remote = tool.name
        self._spec = ToolSpec(
            name=name,
            description=tool.description or f"{tool.name} (MCP server {conn.name})",
            parameters=msgspec.Raw(msgspec.json.encode(schema)),
        )

    @property
    def spec(self) -> ToolSpec:
        return self._spec

    @property
    def effect(self) -> ToolEffect:
        return self._conn.table.approval

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        from mcp import MCPError
        from mcp_types import CONNECTION_CLOSED

        server = self._conn.name
        try:
            result = await call(self._conn, self._remote, args)
        except McpDown as exc:
            return _error(
                MCP_SERVER_CRASHED,
                f"The MCP server {server!r} is not running ({exc}), so {self._spec.name} "
                f"did not run. {self._later()}",
            )
        except TimeoutError:
            return _error(
                MCP_TIMEOUT,
                f"The MCP server {server!r} did not answer {self._spec.name} within "
                f"{self._conn.table.timeout_seconds:g} s; the call was abandoned.",
            )
        except MCPError as exc:
            if exc.code == CONNECTION_CLOSED:
                return _error(
                    MCP_UNKNOWN_AFTER_DISCONNECT,
                    f"The connection to the MCP server {server!r} closed while "
                    f"{self._spec.name} was running: it may or may not have taken effect. "
                    "Check before calling it again; the next call reconnects.",
                )
            return _error(MCP_ERROR, f"The MCP server {server!r} refused the call: {exc.message}")
        except Exception as exc:
            return _error(
                MCP_BAD_RESPONSE,
                f"The MCP server {server!r} answered {self._spec.name} with something that "
                f"is not a tool result ({type(exc).__name__}: {_first_line(exc)}).",
            )
        attached: dict[int, Attachment] = {}
        if self._media is not None and any(
            getattr(b, "type", None) == "image" for b in result.content
        ):
            folder = self._media / ctx.thread_id
            attached = await anyio.to_thread.run_sync(save_images, result.content, folder)
        return to_output(result, attached)

    def _later(self) -> str:
        if self._conn.given_up:
            return "Its tools are unavailable until kun restarts; do not retry."
        return "The next call of its tools tries to reconnect."


def to_output(
    result: CallToolResult, attached: Mapping[int, Attachment] | None = None
) -> ToolOutput:
    """The content blocks as text, but those ``attached`` (by index: the
    images :func:`~kun.mcp.media.save_images` kept), which are attachments
    and a line saying so; ``isError`` as an error result."""
    attached = attached or {}
    parts = [_block(b, attached.get(i)) for i, b in enumerate(result.content)]
    if not parts and result.structured_content is not None:
        parts.append(msgspec.json.encode(result.structured_content).decode())
    text = "\n".join(parts)
    if len(text) > MAX_OUTPUT_CHARS:
        text = f"{text[:MAX_OUTPUT_CHARS]}\n[output cut at {MAX_OUTPUT_CHARS} characters]"
    attachments = tuple(attached.values())
    if result.is_error:
        return ToolOutput(output=text or "The tool reported an error.", is_error=True,
                          code=MCP_TOOL_ERROR, attachments=attachments)  # fmt: skip
    return ToolOutput(output=text, attachments=attachments)


def _block(block: Any, attachment: Attachment | None = None) -> str:
    """One content block as text: text as is, a text resource's text, and
    a line naming what a binary block was (and whether it is attached)."""
    kind = getattr(block, "type", None)
    if kind == "text":
        return str(block.text)
    if attachment is not None:
        return f"[image {attachment.mime_type}, {attachment.size_bytes} bytes, attached]"
    if kind in ("image", "audio"):
        return f"[{kind} {block.mime_type}, {_size(block.data)}, not shown]"
    if kind == "resource":
        resource = block.resource
        text = getattr(resource, "text", None)
        return str(text) if text is not None else f"[resource {resource.uri}, binary, not shown]"
    if kind == "resource_link":
        return f"[resource {block.uri}]"
    return f"[{kind} content, not shown]"


def _size(data: str) -> str:
    try:
        return f"{len(base64.b64decode(data, validate=False)) if data else 0} bytes"
    except (binascii.Error, ValueError):
        return "not valid base64"


def adapt(conn: McpConnection, taken: set[str], media: Path | None = None) -> Iterable[McpTool]:
    """The tools ``conn`` listed that kun can offer: named
    ``<server>__<tool>`` (characters a provider refuses become ``_``), with
    a valid JSON object schema. A tool that cannot be offered is left out
    with a warning, so one bad tool never costs the others. ``media``: where
    the images they return are kept, per thread (:mod:`kun.mcp.media`)."""
    for tool in conn.tools:
        name = _NAME_SUB.sub("_", f"{conn.name}{SEPARATOR}{tool.name}")[:64]
        problem = _problem(name, tool.input_schema, taken)
        if problem is not None:
            _log.warning("MCP server %r: tool %r left out: %s", conn.name, tool.name, problem)
            continue
        taken.add(name)
        yield McpTool(conn, tool, name, dict(tool.input_schema), media)


_NAME_SUB = re.compile(r"[^A-Za-z0-9_-]")


def _problem(name: str, schema: Any, taken: set[str]) -> str | None:
    if name in taken:
        return f"another tool is already named {name!r}"
    if not isinstance(schema, dict) or schema.get("type", "object") != "object":
        return "its input schema is not a JSON object schema"
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        return f"its input schema is invalid: {exc.message}"
    return None if _NAME.fullmatch(name) else f"{name!r} is not a valid tool name"


def _error(code: str, message: str) -> ToolOutput:
    return ToolOutput(output=message, is_error=True, code=code)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else "no detail"
