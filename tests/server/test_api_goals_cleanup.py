"""Goals, trash, restore, gc and reconcile over HTTP, each route one call
of the in-process adapter; a refused goal move is 409 with the session's
words, a busy thread 409 ``thread_locked``, and no answer shows the home."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from kun.model.scripted import text_reply, tool_reply
from tests.runtime.support import SlowTool, host_with
from tests.server.support import Api, api

pytestmark = pytest.mark.anyio


async def test_a_goal_set_changed_refused_and_cleared(tmp_path: Path) -> None:
    async with api(tmp_path) as a:
        thread = await a.new_thread()
        goal = f"/v1/threads/{thread[:12]}/goal"
        none = await a.client.patch(goal, json={"status": "paused"})
        assert none.status_code == 409 and none.json()["error"] == {
            "code": "no_goal",
            "message": "no goal to pause (set one: /goal TEXT)",
        }
        put = await a.client.put(goal, json={"objective": "ship it", "token_budget": 500})
        assert put.status_code == 200, put.text
        assert put.json()["goal"]["objective"] == "ship it"
        assert a.log_state(thread).settings.goal is not None
        paused = await a.client.patch(goal, json={"status": "paused", "clear_budget": True})
        assert paused.json()["goal"]["status"] == "paused"
        assert "token_budget" not in paused.json()["goal"] or (
            paused.json()["goal"]["token_budget"] is None
        )
        again = await a.client.patch(goal, json={"status": "paused"})
        assert again.status_code == 409 and again.json()["error"] == {
            "code": "goal_refused",
            "message": "the goal is paused; /goal pause needs it active",
            "field": "status",
        }
        blocked = await a.client.patch(goal, json={"status": "blocked"})
        assert blocked.status_code == 400 and blocked.json()["error"]["field"] == "status"
        cleared = await a.client.delete(goal)
        assert cleared.status_code == 200 and cleared.json() == {"thread_id": thread, "goal": None}
        twice = await a.client.delete(goal)
        assert twice.status_code == 409 and twice.json()["error"]["code"] == "no_goal"


async def test_trash_list_restore_and_restore_again(tmp_path: Path) -> None:
    async with api(tmp_path) as a:
        thread = await a.new_thread()
        trashed = await a.client.delete(f"/v1/threads/{thread}")
        assert trashed.status_code == 200, trashed.text
        entry = trashed.json()["entry"]
        assert entry.startswith(f"{thread}-") and str(a.home) not in trashed.text
        gone = await a.client.get(f"/v1/threads/{thread}")
        assert gone.status_code == 404
        listed = (await a.client.get("/v1/trash")).json()["entries"]
        assert [(e["entry"], e["thread_id"]) for e in listed] == [(entry, thread)]
        restored = await a.client.post(f"/v1/trash/{entry}/restore")
        assert restored.status_code == 201 and restored.json()["thread_id"] == thread
        assert (await a.client.get(f"/v1/threads/{thread}")).status_code == 200
        missing = await a.client.post(f"/v1/trash/{entry}/restore", json={})
        assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_in_trash"
        assert str(a.home) not in missing.text and "<home>/trash" in missing.text
        second = (await a.client.delete(f"/v1/threads/{thread}")).json()["entry"]
        other = await a.new_thread()
        clash = await a.client.post(f"/v1/trash/{second}/restore", json={"as_id": other})
        assert clash.status_code == 409 and clash.json()["error"] == {
            "code": "thread_exists",
            "message": f"thread {other!r} exists; give --as another id",
            "field": "as_id",
        }
        taken = await a.client.post(f"/v1/trash/{second}/restore", json={"as_id": "thr_b"})
        assert taken.status_code == 201 and taken.json()["thread_id"] == "thr_b"


async def test_a_busy_thread_is_not_trashed_or_collected(tmp_path: Path) -> None:
    started = anyio.Event()
    tools = host_with(SlowTool(started=started))
    async with api(tmp_path, [tool_reply("slow")], tools=tools) as a:
        thread = await a.new_thread()
        turn = await a.start(thread, "work")
        await started.wait()
        for refused in (
            await a.client.delete(f"/v1/threads/{thread}"),
            await a.client.post(f"/v1/threads/{thread}/gc", json={"confirm": False}),
        ):
            assert refused.status_code == 409, refused.text
            error = refused.json()["error"]
            assert error["code"] == "thread_locked" and "has a turn running" in error["message"]
        await a.client.post(f"/v1/threads/{thread}/turns/{turn}/interrupt")
        assert (await a.client.delete(f"/v1/threads/{thread}")).status_code == 200


async def test_gc_after_a_rewind_names_the_generation_inside_the_home(tmp_path: Path) -> None:
    async with api(tmp_path, [text_reply("one"), text_reply("two")]) as a:
        thread = await a.new_thread()
        await a.wait(thread, await a.start(thread, "first"))
        await a.wait(thread, await a.start(thread, "second"))
        rewound = await a.client.post(f"/v1/threads/{thread}/rewind", json={"before_turn": 2})
        assert rewound.status_code == 200, rewound.text
        collected = await a.client.post(f"/v1/threads/{thread}/gc")
        assert collected.status_code == 200, collected.text
        assert collected.json()["generation"] == f"threads/{thread}/generations/1"
        assert collected.json()["turns"] == 1
        confirmed = await a.client.post(f"/v1/threads/{thread}/gc", json={"confirm": True})
        assert confirmed.json()["freed"] > 0
        reconciled = await a.client.post("/v1/reconcile")
        assert reconciled.status_code == 200 and reconciled.json() == {
            "reconciled": [],
            "skipped": {},
        }


async def _pending(a: Api, thread: str) -> str:
    with anyio.fail_after(10):
        while True:
            state = (await a.client.get(f"/v1/threads/{thread}")).json()
            if state["pending_approvals"]:
                pending: str = state["pending_approvals"][0]
                return pending
            await anyio.sleep(0.01)


async def test_an_approval_answered_always_adds_the_rule(tmp_path: Path) -> None:
    script = [
        tool_reply("write_file", {"path": "c.py", "content": "x"}),
        text_reply("written"),
    ]
    async with api(tmp_path, script) as a:
        thread = await a.new_thread(approval_policy="auto")
        turn = await a.start(thread, "write c.py")
        approval = await _pending(a, thread)
        body = {"decision": "approved", "always": {"tool": "write_file"}}
        answered = await a.client.post(f"/v1/approvals/{approval}", json=body)
        assert answered.status_code == 200, answered.text
        assert (await a.wait(thread, turn))["status"] == "completed"
        settings = (await a.client.get(f"/v1/threads/{thread}")).json()["settings"]
        assert settings["always_allow"] == [{"tool": "write_file", "prefix": []}]


async def test_threads_are_named_by_prefix_and_an_ambiguous_one_is_400(tmp_path: Path) -> None:
    async with api(tmp_path) as a:
        first = await a.new_thread()
        one = await a.client.get(f"/v1/threads/{first[:10]}")
        assert one.status_code == 200 and one.json()["thread_id"] == first
        await a.new_thread()
        both = await a.client.get("/v1/threads/thr_")
        assert both.status_code == 400
        assert both.json()["error"]["code"] == "ambiguous_thread_id"
