"""Turns over HTTP: a tool-using turn, steering, interrupt (discard and
seal), approvals and questions answered over HTTP (409 on a second answer
or an unknown id), uploads, and a turn whose model raises."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from kun.contracts.items import ToolResult
from kun.contracts.model import ModelRequest, ModelStreamChunk
from kun.model.scripted import text_reply, tool_reply
from tests.runtime.support import SlowTool, host_with
from tests.server.support import Api, api

pytestmark = pytest.mark.anyio

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


def _kinds(turn: dict[str, Any]) -> list[str]:
    return [item["type"] for item in turn["items"]]


async def _pending(a: Api, thread: str, field: str) -> str:
    with anyio.fail_after(10):
        while True:
            state = (await a.client.get(f"/v1/threads/{thread}")).json()
            if state[field]:
                pending: str = state[field][0]
                return pending
            await anyio.sleep(0.01)


async def test_a_tool_using_turn_runs_in_the_background(tmp_path: Path) -> None:
    script = [tool_reply("read_file", {"path": "a.py"}), text_reply("a.py prints a")]
    async with api(tmp_path, script) as a:
        thread = await a.new_thread()
        turn_id = await a.start(thread, "what does a.py print?")
        turn = await a.wait(thread, turn_id)
        assert turn["status"] == "completed"
        assert "tool_result" in _kinds(turn) and turn["items"][-1]["text"] == "a.py prints a"
        busy = await a.client.get(f"/v1/threads/{thread}")
        assert busy.json() == _json(a.log_state(thread))


def _json(value: Any) -> Any:
    import msgspec

    return msgspec.json.decode(msgspec.json.encode(value))


async def test_steer_then_interrupt_with_and_without_discard(tmp_path: Path) -> None:
    started = anyio.Event()
    script = [tool_reply("slow"), tool_reply("slow")]
    tools = host_with(SlowTool(started=started))
    async with api(tmp_path, script, tools=tools) as a:
        thread = await a.new_thread()
        turn_id = await a.start(thread, "work")
        await started.wait()
        busy = await a.client.post(f"/v1/threads/{thread}/turns", json={"text": "again"})
        assert busy.status_code == 409 and busy.json()["error"]["code"] == "thread_busy"
        steered = await a.client.post(
            f"/v1/threads/{thread}/turns/{turn_id}/steer", json={"text": "also b.py"}
        )
        assert steered.status_code == 202, steered.text
        sealed = await a.client.post(f"/v1/threads/{thread}/turns/{turn_id}/interrupt")
        assert sealed.status_code == 200, sealed.text
        assert sealed.json()["status"] == "aborted" and "tool_result" in _kinds(sealed.json())
        late = await a.client.post(
            f"/v1/threads/{thread}/turns/{turn_id}/steer", json={"text": "too late"}
        )
        assert late.status_code == 409 and late.json()["error"]["code"] == "turn_not_running"

        started = anyio.Event()
        tools.get("slow").started = started  # type: ignore[union-attr]
        second = await a.start(thread, "more")
        await started.wait()
        dropped = await a.client.post(
            f"/v1/threads/{thread}/turns/{second}/interrupt", json={"discard": True}
        )
        assert dropped.json()["status"] == "aborted"
        assert _kinds(dropped.json()) == ["user_message"]
        log = a.log_state(thread)
        assert [t.status for t in log.turns] == ["aborted", "aborted"]
        assert log.turns[0].steered == 1


async def test_unknown_turns_are_404_and_unknown_threads_too(tmp_path: Path) -> None:
    async with api(tmp_path) as a:
        thread = await a.new_thread()
        for path, body in (("steer", {"text": "x"}), ("interrupt", {})):
            r = await a.client.post(f"/v1/threads/{thread}/turns/turn_nope/{path}", json=body)
            assert r.status_code == 404 and r.json()["error"]["code"] == "turn_not_found"
        r = await a.client.post("/v1/threads/thr_nope/turns", json={"text": "x"})
        assert r.status_code == 404 and r.json()["error"]["code"] == "thread_not_found"


async def test_an_approval_answered_once_by_another_client(tmp_path: Path) -> None:
    script = [tool_reply("write_file", {"path": "c.py", "content": "x"}), text_reply("written")]
    async with api(tmp_path, script) as a:
        thread = await a.new_thread(approval_policy="auto")
        turn_id = await a.start(thread, "write c.py")
        approval = await _pending(a, thread, "pending_approvals")
        unknown = await a.client.post("/v1/approvals/appr_nope", json={"decision": "approved"})
        assert unknown.status_code == 409
        other = httpx.AsyncClient(transport=httpx.ASGITransport(app=a.app), base_url="http://b")
        async with other:
            first = await other.post(f"/v1/approvals/{approval}", json={"decision": "approved"})
        assert first.status_code == 200, first.text
        second = await a.client.post(f"/v1/approvals/{approval}", json={"decision": "denied"})
        assert second.status_code == 409 and second.json()["error"]["code"] == "not_pending"
        turn = await a.wait(thread, turn_id)
        assert turn["status"] == "completed" and (a.workspace / "c.py").read_text() == "x"


async def test_a_question_answered_over_http(tmp_path: Path) -> None:
    script = [tool_reply("request_user_input", {"question": "which file?"}), text_reply("ok")]
    async with api(tmp_path, script) as a:
        thread = await a.new_thread()
        turn_id = await a.start(thread, "ask me")
        question = await _pending(a, thread, "pending_user_inputs")
        answered = await a.client.post(f"/v1/user-inputs/{question}", json={"answer": "b.py"})
        assert answered.status_code == 200, answered.text
        again = await a.client.post(f"/v1/user-inputs/{question}", json={"answer": "c.py"})
        assert again.status_code == 409
        assert (await a.wait(thread, turn_id))["status"] == "completed"
        result = next(i for i in a.log_state(thread).turns[0].items if isinstance(i, ToolResult))
        assert "b.py" in result.output


async def test_an_image_goes_up_as_base64_and_the_turn_names_the_servers_copy(
    tmp_path: Path,
) -> None:
    async with api(tmp_path, [text_reply("a pixel")]) as a:
        thread = await a.new_thread()
        upload = {
            "name": "../../dot.png",
            "mime_type": "image/png",
            "data": base64.b64encode(PNG).decode(),
        }
        turn_id = await a.start(thread, "what is this?", attachments=[upload])
        await a.wait(thread, turn_id)
        (attachment,) = a.log_state(thread).turns[0].items[0].attachments  # type: ignore[union-attr]
        assert attachment.name == "../../dot.png" and attachment.size_bytes == len(PNG)
        saved = Path(attachment.path or "")
        assert saved.parent == a.home / "uploads" / thread
        assert await anyio.Path(saved).read_bytes() == PNG


async def test_a_turn_whose_model_raises_fails_and_the_server_answers(tmp_path: Path) -> None:
    def boom(request: ModelRequest) -> Iterator[ModelStreamChunk]:
        raise RuntimeError("the provider adapter broke")

    async with api(tmp_path, [boom, text_reply("fine again")]) as a:
        thread = await a.new_thread()
        failed = await a.wait(thread, await a.start(thread, "one"))
        assert failed["status"] == "failed"
        assert (await a.wait(thread, await a.start(thread, "two")))["status"] == "completed"
