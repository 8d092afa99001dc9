"""Steering over HTTP is never accepted and lost (issue 12, item 8): steering
unread when the turn is interrupted is in the turn the API returns, and a
steer after the turn ended is 409 ``turn_not_running``."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from kun.model.scripted import text_reply, tool_reply
from tests.runtime.support import SlowTool, host_with
from tests.server.support import api

pytestmark = pytest.mark.anyio


async def test_steering_then_interrupt_keeps_the_steering(tmp_path: Path) -> None:
    started = anyio.Event()
    tools = host_with(SlowTool(started=started))
    async with api(tmp_path, [tool_reply("slow"), text_reply("next")], tools=tools) as a:
        thread = await a.new_thread()
        turn_id = await a.start(thread, "work")
        await started.wait()
        base = f"/v1/threads/{thread}/turns/{turn_id}"
        steered = await a.client.post(f"{base}/steer", json={"text": "also b.py"})
        assert steered.status_code == 202, steered.text
        stopped = await a.client.post(f"{base}/interrupt")
        assert stopped.status_code == 200, stopped.text
        messages = [i for i in stopped.json()["items"] if i["type"] == "user_message"]
        assert [(m["text"], m.get("steered", False)) for m in messages] == [
            ("work", False),
            ("also b.py", True),
        ]
        late = await a.client.post(f"{base}/steer", json={"text": "too late"})
        assert late.status_code == 409 and late.json()["error"]["code"] == "turn_not_running"
