"""``POST /v1/threads/{id}/compact``: 202 and a compaction turn followed like
any turn; 200 with no turn when there is nothing to summarise; 409 while a
turn runs; 404 for an unknown thread."""

from __future__ import annotations

from pathlib import Path

import anyio
import httpx
import pytest

from kun.app.requests import CreateThread, StartTurn
from kun.client import AsyncKunClient, KunClient
from kun.model.scripted import text_reply, tool_reply
from kun.runtime.compact_turn import COMPACTED, NOTHING_TO_COMPACT
from tests.runtime.support import SlowTool, host_with
from tests.runtime.test_compaction_loop import LONG, _is_summariser, _summary
from tests.server.support import api

pytestmark = pytest.mark.anyio


async def test_compact_runs_a_compaction_turn_the_next_turn_starts_from(tmp_path: Path) -> None:
    async with api(tmp_path, [text_reply(LONG), _summary(), text_reply("next")]) as a:
        thread = await a.new_thread()
        await a.wait(thread, await a.start(thread, "hello"))
        response = await a.client.post(f"/v1/threads/{thread}/compact")
        assert response.status_code == 202, response.text
        turn_id = response.json()["turn_id"]
        turn = await a.wait(thread, turn_id)
        assert turn["status"] == "completed" and turn["stop_reason"] == COMPACTED
        assert [item["type"] for item in turn["items"]] == ["compaction"]
        assert _is_summariser(a.model.requests[1])
        await a.wait(thread, await a.start(thread, "and now?"))
        assert a.model.requests[2].history[0].id == turn["items"][0]["id"]


async def test_nothing_to_compact_is_a_plain_answer_without_a_turn(tmp_path: Path) -> None:
    async with api(tmp_path) as a:
        thread = await a.new_thread()
        response = await a.client.post(f"/v1/threads/{thread}/compact")
        assert response.status_code == 200, response.text
        assert response.json() == {
            "thread_id": thread,
            "turn_id": None,
            "reason": NOTHING_TO_COMPACT,
        }
        assert a.log_state(thread).turns == ()


async def test_compact_while_a_turn_runs_is_a_conflict(tmp_path: Path) -> None:
    slow = SlowTool(started=anyio.Event())
    script = [text_reply(LONG), tool_reply("slow", {})]
    async with api(tmp_path, script, tools=host_with(slow)) as a:
        thread = await a.new_thread(approval_policy="never")
        await a.wait(thread, await a.start(thread, "hello"))
        turn_id = await a.start(thread, "wait")
        assert slow.started is not None
        with anyio.fail_after(10):
            await slow.started.wait()
        response = await a.client.post(f"/v1/threads/{thread}/compact")
        assert response.status_code == 409, response.text
        assert response.json()["error"]["code"] == "thread_busy"
        await a.client.post(f"/v1/threads/{thread}/turns/{turn_id}/interrupt", json={})


async def test_compact_an_unknown_thread_is_not_found(tmp_path: Path) -> None:
    async with api(tmp_path) as a:
        response = await a.client.post("/v1/threads/thr_nope/compact")
        assert response.status_code == 404, response.text


async def test_the_clients_compact(tmp_path: Path) -> None:
    async with api(tmp_path, [text_reply(LONG), _summary()]) as a:
        transport = httpx.ASGITransport(app=a.app)
        async with AsyncKunClient("http://kun", transport=transport) as kun:
            made = await kun.create_thread(CreateThread(workspace=str(a.workspace)))
            thread = made.thread_id
            assert (await kun.compact(thread)).turn_id is None
            hello = await kun.start_turn(thread, StartTurn(text="hello"))
            await kun.wait_turn(thread, hello.turn_id, poll=0.01)
            turn_id = (await kun.compact(thread)).turn_id
            assert turn_id is not None
            with anyio.fail_after(10):
                turn = await kun.wait_turn(thread, turn_id, poll=0.01)
            assert turn.stop_reason == COMPACTED


def test_the_sync_clients_compact_posts_and_reads_the_turn_id() -> None:
    seen: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(f"{request.method} {request.url.path}")
        return httpx.Response(202, json={"thread_id": "thr_a", "turn_id": "turn_b"})

    with KunClient("http://kun", transport=httpx.MockTransport(answer)) as kun:
        assert kun.compact("thr_a").turn_id == "turn_b"
    assert seen == ["POST /v1/threads/thr_a/compact"]
