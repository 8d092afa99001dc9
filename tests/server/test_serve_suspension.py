"""Durable suspension through ``kun serve`` as a user runs it: a turn
waiting for an approval or a question when the server is SIGKILLed (or
stopped with SIGTERM) still waits after a restart; the answer resumes it
from the log, the approved call runs exactly once and the turn completes."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from kun.domain.reduce import replay
from kun.model.scripted import tool_reply
from kun.store.jsonl import JsonlEventStore
from kun.testing.fake_provider import FakeProvider, FakeResponse
from tests.server.test_serve import ANSWER, _serve, _wait_settled, _workspace

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def _pending(client: httpx.AsyncClient, thread: str, key: str) -> list[str]:
    state: dict[str, Any] = (await client.get(f"/v1/threads/{thread}")).json()
    pending: list[str] = state[key]
    return pending


async def _waiting(client: httpx.AsyncClient, thread: str, key: str) -> str:
    """The first id waiting for an answer, once there is one."""
    with anyio.fail_after(10):
        pending = await _pending(client, thread, key)
        while not pending:
            await anyio.sleep(0.02)
            pending = await _pending(client, thread, key)
    return pending[0]


@pytest.mark.parametrize("stop", [signal.SIGKILL, signal.SIGTERM])
async def test_an_approval_survives_a_restart_and_the_call_runs_once(
    tmp_path: Path, stop: signal.Signals
) -> None:
    workspace = _workspace(tmp_path)
    command = "echo ran >> ran.txt"
    script = [FakeResponse(chunks=tuple(tool_reply("bash", {"command": command}))), ANSWER]
    async with FakeProvider(script, format="chat_completions") as provider:
        async with _serve(tmp_path, provider.base_url) as (process, client):
            created = await client.post("/v1/threads", json={"workspace": workspace})
            thread = created.json()["thread_id"]
            started = await client.post(f"/v1/threads/{thread}/turns", json={"text": "run it"})
            turn_id = started.json()["turn_id"]
            approval = await _waiting(client, thread, "pending_approvals")
            process.send_signal(stop)
            await process.wait()
        async with _serve(tmp_path, provider.base_url) as (_, client):
            assert await _waiting(client, thread, "pending_approvals") == approval
            turn = (await client.get(f"/v1/threads/{thread}/turns/{turn_id}")).json()
            assert turn["status"] == "running"
            answered = await client.post(f"/v1/approvals/{approval}", json={"decision": "approved"})
            assert answered.status_code == 200, answered.text
            settled = await _wait_settled(client, thread, turn_id)
            again = await client.post(f"/v1/approvals/{approval}", json={"decision": "approved"})
            assert again.status_code == 409
    assert settled["status"] == "completed"
    assert settled["items"][-1]["text"] == "a.py prints a."
    assert (Path(workspace) / "ran.txt").read_text() == "ran\n"
    assert len(provider.requests) == 2
    state = replay(JsonlEventStore(tmp_path / "home").read(thread, mode="strict"))
    assert [t.status for t in state.turns] == ["completed"]
    assert state.pending_approvals == ()


async def test_a_question_survives_a_restart_and_its_answer_is_the_result(
    tmp_path: Path,
) -> None:
    ask = tool_reply("request_user_input", {"question": "Which db?", "options": ["pg", "sqlite"]})
    script = [FakeResponse(chunks=tuple(ask)), ANSWER]
    async with FakeProvider(script, format="chat_completions") as provider:
        async with _serve(tmp_path, provider.base_url) as (process, client):
            created = await client.post("/v1/threads", json={"workspace": _workspace(tmp_path)})
            thread = created.json()["thread_id"]
            started = await client.post(f"/v1/threads/{thread}/turns", json={"text": "set up"})
            turn_id = started.json()["turn_id"]
            question = await _waiting(client, thread, "pending_user_inputs")
            process.send_signal(signal.SIGKILL)
            await process.wait()
        async with _serve(tmp_path, provider.base_url) as (_, client):
            assert await _waiting(client, thread, "pending_user_inputs") == question
            answered = await client.post(f"/v1/user-inputs/{question}", json={"answer": "pg"})
            assert answered.status_code == 200, answered.text
            settled = await _wait_settled(client, thread, turn_id)
    assert settled["status"] == "completed"
    results = [i for i in settled["items"] if i["type"] == "tool_result"]
    assert [r["output"] for r in results] == ["The user answered: pg"]
    sent = provider.requests[-1].json["messages"]
    assert any("The user answered: pg" in str(m.get("content")) for m in sent)
