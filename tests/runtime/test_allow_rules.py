"""Dispatch with the thread's "always" rules and the diffs it records:
a rule turns an ask into a run, never a deny into one; an approval carries
the diff the write would make, the result the diff it made (the wire
formats send only the output: tests/test_approvals_terminal.py)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from kun.contracts import events as ev
from kun.contracts.items import Approval, ToolResult
from kun.contracts.threads import AllowRule
from kun.model.scripted import text_reply, tool_reply
from kun.store.jsonl import JsonlEventStore
from tests.runtime.support import harness

pytestmark = pytest.mark.anyio

ECHO = AllowRule(tool="bash", prefix=("echo",))


async def test_a_rule_runs_its_prefix_and_asks_for_anything_else(tmp_path: Path) -> None:
    script = [
        tool_reply("bash", {"command": "echo covered"}, call_id="c1"),
        tool_reply("bash", {"command": "echo x; touch chained"}, call_id="c2"),
        text_reply("done"),
    ]
    async with harness(tmp_path, script, policy="on-request") as h:
        await h.service.update_thread(h.thread_id, always_allow=(ECHO,))
        turn_id = await h.service.start_turn(h.thread_id, "go")
        with anyio.fail_after(10):
            async for event in h.service.recorder.subscribe(h.thread_id):
                if isinstance(event, ev.ApprovalRequested):
                    assert event.summary == "bash: echo x; touch chained"
                    await h.service.answer_approval(event.approval_id, "denied", "no chains")
                    break
        turn = await h.service.wait_turn(h.thread_id, turn_id)
    results = [i for i in turn.items if isinstance(i, ToolResult)]
    assert results[0].output.startswith("covered\n") and not results[0].is_error
    assert results[1].code == "denied_by_user"
    assert "Their reason: no chains." in results[1].output
    assert [a.status for a in turn.items if isinstance(a, Approval)] == ["denied"]
    assert not (h.workspace / "chained").exists()


async def test_a_rule_never_overrides_a_deny(tmp_path: Path) -> None:
    script = [tool_reply("bash", {"command": "echo hi"}), text_reply("ok")]
    async with harness(tmp_path, script, policy="never") as h:
        await h.service.update_thread(h.thread_id, always_allow=(ECHO,))
        turn = await h.run("go")
    (result,) = [i for i in turn.items if isinstance(i, ToolResult)]
    assert result.code == "denied_by_policy"


async def test_full_auto_runs_commands_without_asking(tmp_path: Path) -> None:
    script = [tool_reply("bash", {"command": "echo made > made.txt"}), text_reply("ok")]
    async with harness(tmp_path, script, policy="full-auto") as h:
        turn = await h.run("go")
    assert (h.workspace / "made.txt").read_text() == "made\n"
    assert not any(isinstance(i, Approval) for i in turn.items)


async def test_the_approval_and_the_result_carry_diffs_the_model_never_sees(
    tmp_path: Path,
) -> None:
    write = {"path": "a.py", "content": "print('A')\n"}
    script = [tool_reply("write_file", write), text_reply("written")]
    async with harness(tmp_path, script, policy="untrusted") as h:
        turn_id = await h.service.start_turn(h.thread_id, "write")
        with anyio.fail_after(10):
            async for event in h.service.recorder.subscribe(h.thread_id):
                if isinstance(event, ev.ApprovalRequested):
                    await h.service.answer_approval(event.approval_id, "approved")
                    break
        turn = await h.service.wait_turn(h.thread_id, turn_id)
        second = h.model.requests[1]
    (requested,) = [
        e for e in JsonlEventStore(h.home).read(h.thread_id) if isinstance(e, ev.ApprovalRequested)
    ]
    expected = "--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-print('a')\n+print('A')"
    assert requested.diff == expected and requested.summary == "write_file a.py"
    (approval,) = [i for i in turn.items if isinstance(i, Approval)]
    (result,) = [i for i in turn.items if isinstance(i, ToolResult)]
    assert approval.diff == expected and result.diff == expected
    assert second.history[-1] == result
