"""A small real MCP server for kun's tests, written with the ``mcp`` package.

``python demo.py`` serves over stdio; ``python demo.py http PORT`` over
streamable HTTP on 127.0.0.1:PORT (path ``/mcp``), refusing requests whose
``Authorization`` header is not ``Bearer $DEMO_HTTP_TOKEN`` when that
variable is set.
"""

from __future__ import annotations

import os
import socket
import sys
import time
from typing import Any

import uvicorn
from mcp.server.mcpserver import Context, Image, MCPServer

server = MCPServer("demo")


@server.tool()
def echo(text: str) -> str:
    """Return the text."""
    return text


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def getenv(name: str) -> str:
    """The value of an environment variable of the server, or <unset>."""
    return os.environ.get(name, "<unset>")


@server.tool()
def slow(seconds: float) -> str:
    """Sleep, then answer."""
    time.sleep(seconds)
    return "woke up"


@server.tool()
def pid() -> int:
    """The server's process id."""
    return os.getpid()


@server.tool()
def connect(port: int) -> str:
    """Connect to 127.0.0.1:PORT: connected, or why not."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            return "connected"
    except OSError as exc:
        return f"refused: {exc}"


def extra() -> str:
    """A tool offered once ``grow`` ran."""
    return "extra ran"


@server.tool()
async def grow(ctx: Context) -> str:
    """Offer one more tool, ``extra``, and announce the new list."""
    server.add_tool(extra)
    await ctx.session.send_tool_list_changed()
    return "grown"


PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 64
"""Not a picture anyone can see, but PNG by its signature; 16 KiB."""


@server.tool(structured_output=False)
def picture() -> list[Any]:
    """A caption and a PNG image."""
    return ["a chart", Image(data=PNG, format="png")]


@server.tool()
def crash() -> str:
    """Kill the server process."""
    os._exit(3)


@server.tool()
def bad(ctx: Context) -> str:
    """Answer with a result that is not a tool result (stdio only)."""
    from mcp.server import stdio

    wire = stdio._claims[1].private_fd  # mcp moved the protocol off fd 1
    assert wire is not None
    rid = ctx.request_id
    raw = rid if rid.isdigit() else f'"{rid}"'
    os.write(wire, f'{{"jsonrpc":"2.0","id":{raw},"result":{{"content":"garbage"}}}}\n'.encode())
    time.sleep(0.2)
    return "late"


@server.tool()
def fail() -> str:
    """A tool that reports an error."""
    raise ValueError("the tool failed on purpose")


def guarded(app: Any, token: str | None) -> Any:
    """``app`` behind a bearer token, as a hosted MCP server would be."""
    expected = f"Bearer {token}".encode()

    async def asgi(scope: Any, receive: Any, send: Any) -> None:
        if (
            token
            and scope["type"] == "http"
            and dict(scope["headers"]).get(b"authorization") != expected
        ):
            await send({"type": "http.response.start", "status": 401, "headers": []})
            await send({"type": "http.response.body", "body": b"unauthorized"})
            return
        await app(scope, receive, send)

    return asgi


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "http":
        app = guarded(server.streamable_http_app(), os.environ.get("DEMO_HTTP_TOKEN"))
        uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
    else:
        server.run()


if __name__ == "__main__":
    main()
