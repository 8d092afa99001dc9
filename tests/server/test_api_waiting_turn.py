"""A turn a terminal left waiting for an approval after ``kun serve``
started (so reconciliation at start-up never saw it) is taken up by the
server the first time it reads the thread: the approval can be answered
there and the turn goes on, on the server's model."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from kun.contracts import events as ev
from kun.contracts.threads import ThreadSettings
from kun.model.scripted import text_reply, tool_reply
from kun.store.jsonl import JsonlEventStore
from tests.runtime.test_writer_release import other_process
from tests.server.support import api

pytestmark = pytest.mark.anyio


async def test_a_turn_left_waiting_elsewhere_is_answered_through_the_server(
    tmp_path: Path,
) -> None:
    async with api(tmp_path, [text_reply("written")]) as a:
        write = tool_reply("write_file", {"path": "c.py", "content": "x"})
        async with other_process(a.home, write) as terminal:
            settings = ThreadSettings(workspace=str(a.workspace), approval_policy="auto")
            thread = await terminal.create_thread(settings)
            await terminal.start_turn(thread, "write c.py")
            with anyio.fail_after(10):
                async for event in terminal.recorder.subscribe(thread):
                    if isinstance(event, ev.ApprovalRequested):
                        approval = event.approval_id
                        break
        shown = (await a.client.get(f"/v1/threads/{thread}")).json()
        assert shown["pending_approvals"] == [approval]
        answered = await a.client.post(f"/v1/approvals/{approval}", json={"decision": "approved"})
        assert answered.status_code == 200, answered.text
        turn_id = shown["turns"][-1]["turn_id"]
        assert (await a.wait(thread, turn_id))["status"] == "completed"
    assert (a.workspace / "c.py").read_text() == "x"
    kinds = [type(e).__name__ for e in JsonlEventStore(a.home).read(thread)]
    assert kinds.count("ApprovalResolved") == 1 and kinds[-1] == "TurnCompleted"
