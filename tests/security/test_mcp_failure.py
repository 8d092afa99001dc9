"""An MCP server reached over HTTP with a key in its ``url`` query: the
failure kun reports (a warning, the thread's notice) names the URL without
the key."""

from __future__ import annotations

import httpx

from kun.mcp.connection import _describe

URL = "https://mcp.example.test/mcp?api_key=mcp-secret-0123456789&team=a"


def test_a_failure_quoting_the_url_does_not_show_its_key() -> None:
    request = httpx.Request("POST", URL)
    response = httpx.Response(401, request=request)
    error = httpx.HTTPStatusError(
        f"Client error '401 Unauthorized' for url '{URL}'", request=request, response=response
    )
    for exc in (error, ExceptionGroup("task group", [error])):
        text = _describe(exc)
        assert "mcp-secret-0123456789" not in text
        assert "api_key=[redacted]&team=a" in text and text.startswith("HTTPStatusError: ")
