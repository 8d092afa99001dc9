"""Sub-agents over the HTTP API: a sub-agent's approval shows on the
parent thread (its projection and its event stream, naming the side
thread) and is answered there like the parent's own."""

from __future__ import annotations

from pathlib import Path

import anyio
import httpx
import msgspec
import pytest

from kun.config.load import parse_config
from kun.contracts.items import ToolResult
from kun.contracts.model import ModelRequest, ModelStreamChunk
from kun.model.scripted import ScriptedModelClient, text_reply, tool_reply
from kun.runtime.delegation import SUBAGENT_PROMPT
from kun.server.app import create_app
from kun.server.backend import backend_over

pytestmark = pytest.mark.anyio
WAIT = 10.0


def _respond(request: ModelRequest) -> list[ModelStreamChunk]:
    done = any(isinstance(i, ToolResult) for i in request.history)
    if SUBAGENT_PROMPT in request.system_prompt:
        return text_reply("ran it") if done else tool_reply("bash", {"command": "echo hi"})
    if done:
        return text_reply("the helper ran it")
    return tool_reply("delegate_task", {"task": "run echo hi", "agent": "doer"})


async def test_a_sub_agents_approval_is_answered_on_the_parent(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    config = parse_config(
        '[agents.doer]\ntools = ["bash"]\napproval_policy = "full-auto"\n', "kun.toml"
    )
    model = ScriptedModelClient(_respond)
    app = create_app(lambda: backend_over(tmp_path / "home", model, config=config))
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://kun") as client,
    ):
        made = await client.post(
            "/v1/threads", json={"workspace": str(workspace), "approval_policy": "on-request"}
        )
        thread = made.json()["thread_id"]
        started = await client.post(f"/v1/threads/{thread}/turns", json={"text": "go"})
        turn = started.json()["turn_id"]
        with anyio.fail_after(WAIT):
            while True:
                state = (await client.get(f"/v1/threads/{thread}")).json()
                if state["pending_approvals"]:
                    break
                await anyio.sleep(0.01)
        (approval,) = state["pending_approvals"]
        events = await client.get(
            f"/v1/threads/{thread}/events", params={"until": str(state["last_seq"])}
        )
        asked = [
            msgspec.json.decode(line[len("data: ") :])
            for line in events.text.splitlines()
            if line.startswith("data: ") and '"approval_requested"' in line
        ]
        (shown,) = asked
        assert shown["approval_id"] == approval and shown["tool_name"] == "bash"
        side = shown["side_thread"]
        hidden = (await client.get("/v1/threads")).json()
        assert side not in {t["thread_id"] for t in hidden["threads"]}
        answered = await client.post(f"/v1/approvals/{approval}", json={"decision": "approved"})
        assert answered.status_code == 200, answered.text
        with anyio.fail_after(WAIT):
            while True:
                got = (await client.get(f"/v1/threads/{thread}/turns/{turn}")).json()
                if got["status"] != "running":
                    break
                await anyio.sleep(0.01)
        assert got["status"] == "completed"
        side_state = (await client.get(f"/v1/threads/{side}")).json()
        assert side_state["settings"]["link"]["thread_id"] == thread
        assert side_state["turns"][0]["status"] == "completed"
