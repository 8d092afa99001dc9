"""A Kimi thread through the HTTP API: the app in process, its model a real
HTTP client talking to a fake Moonshot on 127.0.0.1 (the wire is real),
with a tool call whose reasoning goes back to Kimi and ``$web_search``
answered with its own arguments."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import httpx
import msgspec
import pytest

from kun.app.session import tool_host
from kun.config import parse_config
from kun.domain.reduce import replay
from kun.model.factory import build_router
from kun.server.app import create_app
from kun.server.backend import backend_over
from kun.store.jsonl import JsonlEventStore
from kun.testing.fake_provider import FakeProvider
from tests.test_cli_run_kimi import SCRIPT, SEARCH

from .support import WAIT_SECONDS

pytestmark = pytest.mark.anyio


async def _settled(client: httpx.AsyncClient, thread: str, turn: str) -> dict[str, Any]:
    with anyio.fail_after(WAIT_SECONDS):
        while True:
            got: dict[str, Any] = (await client.get(f"/v1/threads/{thread}/turns/{turn}")).json()
            if got["status"] not in ("queued", "running"):
                return got
            await anyio.sleep(0.01)


async def test_a_kimi_thread_through_the_api(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.py").write_text("print('a')\n")
    home = tmp_path / "home"
    async with FakeProvider(SCRIPT, format="chat_completions", dialect="kimi") as provider:
        config = parse_config(
            f'[providers.kimi]\nbase_url = "{provider.base_url}"\ndialect = "kimi"\n'
            'catalog = "moonshotai"\ndefault_model = "kimi-k2.6"\n'
            'api_key_env = "FAKE_MOONSHOT_KEY"\nweb_search = true\n',
            "kun.toml",
        )
        tools = tool_host(config, {})
        async with build_router(config, environ={"FAKE_MOONSHOT_KEY": "sk-fake"}) as model:
            app = create_app(lambda: backend_over(home, model, tools=tools))
            transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
            async with (
                app.router.lifespan_context(app),
                httpx.AsyncClient(transport=transport, base_url="http://kun") as client,
            ):
                created = await client.post("/v1/threads", json={"workspace": str(workspace)})
                thread = created.json()["thread_id"]
                text = "what does a.py print? and the news?"
                started = await client.post(f"/v1/threads/{thread}/turns", json={"text": text})
                settled = await _settled(client, thread, started.json()["turn_id"])
        bodies = [r.json for r in provider.requests if r.method == "POST"]
    assert settled["status"] == "completed", settled
    assert len(bodies) == 3
    second = bodies[1]["messages"]
    call = next(m for m in second if m.get("tool_calls"))
    assert call["reasoning_content"] == "I should read a.py first."
    third = bodies[2]["messages"]
    echo = [m for m in third if m["role"] == "tool"][-1]
    assert echo["name"] == "$web_search"
    assert msgspec.json.decode(echo["content"]) == SEARCH
    state = replay(JsonlEventStore(home).read(thread))
    assert state.turns[0].status == "completed"
    per_call = (200 * 0.95 + 800 * 0.16 + 50 * 4) / 1e6
    assert state.usage.cost_usd == pytest.approx(3 * per_call)
