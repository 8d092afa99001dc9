"""A server whose tool list is cached is not waited for: the first model
request goes out while it starts (:mod:`kun.mcp.listcache`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import pytest

from kun.config.schema import McpServerTable
from kun.contracts.model import ModelRequest
from kun.mcp.listcache import CACHE_NAME
from kun.model.scripted import Response, text_reply, tool_reply
from tests.mcp.support import mcp_run

pytestmark = pytest.mark.anyio

GATED = Path(__file__).parent / "servers" / "gated.py"


def _gated(tmp_path: Path) -> tuple[McpServerTable, Path, Path]:
    gate, fail = tmp_path / "gate", tmp_path / "fail"
    table = McpServerTable(command=sys.executable, args=(str(GATED), str(gate), str(fail)))
    return table, gate, fail


def _names(request: ModelRequest) -> set[str]:
    return {tool.name for tool in request.tools}


def _open(gate: Path) -> None:
    gate.touch()


def _cached_names(home: Path) -> set[str]:
    cached = json.loads((home / CACHE_NAME).read_bytes())
    return {tool["name"] for tool in cached["g"]["tools"]}


async def _first_run(tmp_path: Path, table: McpServerTable, gate: Path) -> None:
    """Without a cache the server is waited for; its list is then cached."""
    _open(gate)
    async with mcp_run(tmp_path, [text_reply("listed")], {"g": table}) as run:
        await run.turn()
    assert "g__echo" in _names(run.model.requests[0])
    assert "echo" in _cached_names(tmp_path / "home")
    await anyio.Path(gate).unlink()


async def test_a_cached_server_starts_beside_the_first_request(tmp_path: Path) -> None:
    table, gate, _ = _gated(tmp_path)
    await _first_run(tmp_path, table, gate)

    def first(request: ModelRequest) -> Response:
        assert "g__echo" in _names(request)  # offered from the cache...
        _open(gate)  # ...while the server still waits to start
        return tool_reply("g__echo", {"text": "hi"}, call_id="c1")

    with anyio.fail_after(20):
        async with mcp_run(tmp_path, [first, text_reply("done")], {"g": table}) as run:
            turn = await run.turn()
    assert turn.status == "completed"
    result = run.results(turn)["c1"]
    assert result.code is None and "hi" in result.output  # the call waited for the start


async def test_a_cached_server_that_fails_to_start_loses_its_tools_next_step(
    tmp_path: Path,
) -> None:
    table, gate, fail = _gated(tmp_path)
    await _first_run(tmp_path, table, gate)
    _open(fail)

    def first(request: ModelRequest) -> Response:
        _open(gate)
        return tool_reply("g__echo", {"text": "hi"}, call_id="c1")

    with anyio.fail_after(20):
        async with mcp_run(tmp_path, [first, text_reply("without it")], {"g": table}) as run:
            turn = await run.turn()
    assert turn.status == "completed"
    result = run.results(turn)["c1"]
    assert result.code == "mcp_server_crashed"
    assert "did not start" in result.output and "gated: told to fail" in result.output
    assert not any(name.startswith("g__") for name in _names(run.model.requests[1]))
