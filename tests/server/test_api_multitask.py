"""``multitask`` over HTTP: what a turn sent while one runs does (reject,
enqueue, steer, interrupt), a queued turn shown and interrupted, and the
queue's limit as a 409 with its code."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from kun.model.scripted import text_reply, tool_reply
from tests.runtime.support import SlowTool, host_with
from tests.server.support import api

pytestmark = pytest.mark.anyio


async def test_each_multitask_while_a_turn_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("kun.runtime.queue.MAX_QUEUED", 2)
    started, release = anyio.Event(), anyio.Event()
    script = [tool_reply("slow"), tool_reply("slow"), text_reply("later"), text_reply("now")]
    slow = SlowTool(started=started, release=release)
    async with api(tmp_path, script, tools=host_with(slow)) as a:
        thread = await a.new_thread()
        turns = f"/v1/threads/{thread}/turns"
        first = await a.client.post(turns, json={"text": "work", "multitask": "enqueue"})
        assert first.status_code == 202 and first.json()["status"] == "running"
        running = first.json()["turn_id"]
        await started.wait()

        refused = await a.client.post(turns, json={"text": "no", "multitask": "reject"})
        assert refused.status_code == 409 and refused.json()["error"]["code"] == "thread_busy"
        steered = await a.client.post(turns, json={"text": "and b.py", "multitask": "steer"})
        assert steered.status_code == 202, steered.text
        assert steered.json() == {
            "thread_id": thread,
            "turn_id": running,
            "status": "running",
            "steered": True,
        }
        queued = await a.client.post(turns, json={"text": "later", "multitask": "enqueue"})
        dropped = await a.client.post(turns, json={"text": "dropped", "multitask": "enqueue"})
        assert queued.json()["status"] == dropped.json()["status"] == "queued"
        full = await a.client.post(turns, json={"text": "too many", "multitask": "enqueue"})
        assert full.status_code == 409 and full.json()["error"]["code"] == "turns_queued"
        shown = await a.turn(thread, dropped.json()["turn_id"])
        assert shown["status"] == "queued" and shown["items"][0]["text"] == "dropped"
        cancel = await a.client.post(f"{turns}/{dropped.json()['turn_id']}/interrupt")
        assert cancel.status_code == 200 and cancel.json()["abort_reason"] == "cancelled"
        rewind = await a.client.post(f"/v1/threads/{thread}/rewind", json={"before_turn": "1"})
        assert rewind.status_code == 409

        # interrupt: the running turn is stopped; the new turn waits behind
        # the one already queued, which keeps its place.
        last = await a.client.post(turns, json={"text": "now", "multitask": "interrupt"})
        assert last.status_code == 202, last.text
        assert last.json()["status"] == "queued"
        assert (await a.turn(thread, running))["status"] == "aborted"
        release.set()
        assert (await a.wait(thread, queued.json()["turn_id"]))["status"] == "completed"
        done = await a.wait(thread, last.json()["turn_id"])
        assert done["status"] == "completed" and done["items"][-1]["text"] == "now"
        bad = await a.client.post(turns, json={"text": "x", "multitask": "later"})
        assert bad.status_code in (400, 422) and "multitask" in bad.text
