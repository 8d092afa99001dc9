"""MCP tools over streamable HTTP: the demo server on 127.0.0.1 behind a
bearer token that ``headers_env`` supplies."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from kun.config.schema import McpServerTable
from kun.model.scripted import text_reply, tool_reply
from tests.mcp.support import free_port, http_demo, mcp_run

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

TOKEN = "http-tok-5be1d0a7c9"


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with http_demo({**os.environ, "DEMO_HTTP_TOKEN": TOKEN}) as address:
        yield address


def web(url: str) -> McpServerTable:
    return McpServerTable(url=url, headers_env={"Authorization": "DEMO_BEARER"}, timeout_seconds=5)


async def test_a_turn_calls_a_tool_of_an_http_server(
    tmp_path: Path, url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEMO_BEARER", f"Bearer {TOKEN}")
    script = [
        tool_reply("web__add", {"a": 1, "b": 2}, call_id="c1"),
        tool_reply("web__echo", {"text": f"Bearer {TOKEN}"}, call_id="c2"),
        tool_reply("web__echo", {"text": f"token={TOKEN}"}, call_id="c3"),
        text_reply("done"),
    ]
    async with mcp_run(tmp_path, script, {"web": web(url)}) as run:
        turn = await run.turn()
    results = run.results(turn)
    assert turn.status == "completed"
    assert results["c1"].output == "3"
    assert results["c2"].output == "[redacted]"
    assert results["c3"].output == "token=[redacted]"


async def test_a_refused_http_server_is_a_warning_and_the_thread_runs(
    tmp_path: Path, url: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("DEMO_BEARER", "Bearer wrong")
    script = [text_reply("fine")]
    with caplog.at_level(logging.WARNING, logger="kun.mcp"):
        async with mcp_run(tmp_path, script, {"web": web(url)}) as run:
            turn = await run.turn()
            names = {t.name for t in run.model.requests[0].tools}
    assert turn.status == "completed"
    assert not any(n.startswith("web__") for n in names)
    assert "'web' did not start" in caplog.text


async def test_an_http_server_that_restarts_is_reconnected_by_the_next_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEMO_BEARER", f"Bearer {TOKEN}")
    env, port = {**os.environ, "DEMO_HTTP_TOKEN": TOKEN}, free_port()
    script = [
        tool_reply("web__pid", {}, call_id="c1"),
        text_reply("first"),
        tool_reply("web__pid", {}, call_id="c2"),
        tool_reply("web__echo", {"text": "back"}, call_id="c3"),
        text_reply("second"),
    ]
    with ExitStack() as first_server:
        url = first_server.enter_context(http_demo(env, port))
        async with mcp_run(tmp_path, script, {"web": web(url)}) as run:
            first = run.results(await run.turn())["c1"]
            first_server.close()
            with http_demo(env, port):
                results = run.results(await run.turn())
    assert first.output.isdigit()
    assert results["c2"].output.isdigit() and results["c2"].output != first.output
    assert results["c3"].output == "back"
