"""Calls for a turn another worker runs reach it (issue 21, item 3): on a
shared PostgreSQL store, a second turn, steering, an interrupt and an
approval's answer sent to one worker are made by the worker that runs the
turn, and its refusals come back with their own status and code."""

from __future__ import annotations

import anyio
import pytest

from kun.model.scripted import text_reply, tool_reply
from tests.runtime.support import SlowTool, host_with
from tests.server.cluster_support import worker
from tests.server.support import Api

pytestmark = pytest.mark.anyio


async def _pending(a: Api, thread: str, field: str) -> str:
    with anyio.fail_after(10):
        while True:
            state = (await a.client.get(f"/v1/threads/{thread}")).json()
            if state[field]:
                pending: str = state[field][0]
                return pending
            await anyio.sleep(0.01)


async def test_a_turn_running_on_one_worker_is_steered_and_stopped_from_another(
    postgres_url: str, tmp_path: pytest.TempPathFactory
) -> None:
    started = anyio.Event()
    tools = host_with(SlowTool(started=started))
    async with (
        worker(postgres_url, tmp_path, "a", [tool_reply("slow")], tools=tools) as a,  # type: ignore[arg-type]
        worker(postgres_url, tmp_path, "b", [text_reply("from b")]) as b,  # type: ignore[arg-type]
    ):
        thread = await a.new_thread()
        turn = await a.start(thread, "work")
        with anyio.fail_after(10):
            await started.wait()
        busy = await b.client.post(f"/v1/threads/{thread}/turns", json={"text": "again"})
        assert busy.status_code == 409 and busy.json()["error"]["code"] == "thread_busy"
        steered = await b.client.post(
            f"/v1/threads/{thread}/turns/{turn}/steer", json={"text": "also b.py"}
        )
        assert steered.status_code == 202, steered.text
        stopped = await b.client.post(f"/v1/threads/{thread}/turns/{turn}/interrupt")
        assert stopped.status_code == 200, stopped.text
        assert stopped.json()["status"] == "aborted"
        late = await b.client.post(
            f"/v1/threads/{thread}/turns/{turn}/steer", json={"text": "too late"}
        )
        assert late.status_code == 409 and late.json()["error"]["code"] == "turn_not_running"
        state = (await b.client.get(f"/v1/threads/{thread}")).json()
        assert state["turns"][0]["steered"] == 1
        second = await b.start(thread, "now here")  # nobody writes the thread: b runs it
        assert (await b.wait(thread, second))["items"][-1]["text"] == "from b"
        assert len(b.model.calls) == 1 and len(a.model.calls) == 1


async def test_an_approval_asked_on_one_worker_is_answered_through_another(
    postgres_url: str, tmp_path: pytest.TempPathFactory
) -> None:
    script = [tool_reply("write_file", {"path": "c.py", "content": "x"}), text_reply("written")]
    async with (
        worker(postgres_url, tmp_path, "a", script) as a,  # type: ignore[arg-type]
        worker(postgres_url, tmp_path, "b") as b,  # type: ignore[arg-type]
    ):
        thread = await a.new_thread(approval_policy="auto")
        turn = await a.start(thread, "write c.py")
        approval = await _pending(b, thread, "pending_approvals")
        unknown = await b.client.post("/v1/approvals/appr_nope", json={"decision": "approved"})
        assert unknown.status_code == 409 and unknown.json()["error"]["code"] == "not_pending"
        first = await b.client.post(f"/v1/approvals/{approval}", json={"decision": "approved"})
        assert first.status_code == 200, first.text
        again = await b.client.post(f"/v1/approvals/{approval}", json={"decision": "denied"})
        assert again.status_code == 409 and again.json()["error"]["code"] == "not_pending"
        assert (await a.wait(thread, turn))["status"] == "completed"
        assert (a.workspace / "c.py").read_text() == "x"


async def test_a_turn_whose_workspace_a_worker_cannot_reach_waits_for_one_that_can(
    postgres_url: str, tmp_path: pytest.TempPathFactory
) -> None:
    async with worker(postgres_url, tmp_path, "a", roots=("/nowhere",)) as a:  # type: ignore[arg-type]
        thread = await a.new_thread()
        response = await a.client.post(f"/v1/threads/{thread}/turns", json={"text": "far"})
        assert response.status_code == 202, response.text
        assert response.json()["status"] == "queued"
        turn_id = response.json()["turn_id"]
        waiting = await a.turn(thread, turn_id)
        assert waiting["status"] == "queued"
        assert str(a.workspace) in waiting["waiting_for"]
        async with worker(postgres_url, tmp_path, "b", [text_reply("reached")]) as b:  # type: ignore[arg-type]
            done = await b.wait(thread, turn_id)
            assert done["status"] == "completed" and done["items"][-1]["text"] == "reached"
            assert done.get("waiting_for") is None
        assert a.model.calls == []
