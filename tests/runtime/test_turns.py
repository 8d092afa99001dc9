"""The loop end to end with a scripted model: outcomes, dispatch, errors."""

from __future__ import annotations

from pathlib import Path

import anyio
import anyio.lowlevel
import msgspec
import pytest

from kun.contracts import events as ev
from kun.contracts.items import ErrorItem, ToolCall, ToolResult, UserMessage
from kun.contracts.model import CompletedChunk, TextDeltaChunk, UsageChunk
from kun.contracts.usage import UsageSnapshot
from kun.domain.reduce import replay
from kun.model.scripted import text_reply, tool_reply
from kun.runtime.context import TurnLimits
from kun.store.jsonl import JsonlEventStore
from tests.runtime.support import CrashTool, calls, harness, host_with

pytestmark = pytest.mark.anyio


def _results(turn: object) -> list[ToolResult]:
    return [i for i in turn.items if isinstance(i, ToolResult)]  # type: ignore[attr-defined]


async def test_a_multi_step_turn_reads_edits_and_answers(tmp_path: Path) -> None:
    script = [
        tool_reply("read_file", {"path": "a.py"}, text="Looking."),
        tool_reply(
            "edit_file", {"path": "a.py", "old_string": "'a'", "new_string": "'A'"}, call_id="c2"
        ),
        [
            TextDeltaChunk(text="Done: "),
            TextDeltaChunk(text="a.py prints A."),
            UsageChunk(usage=UsageSnapshot(prompt_tokens=50, completion_tokens=5)),
            CompletedChunk(stop_reason="stop"),
        ],
    ]
    async with harness(tmp_path, script) as h:
        turn = await h.run("make a.py print A")
        assert turn.status == "completed" and turn.stop_reason == "stop"
        assert (h.workspace / "a.py").read_text() == "print('A')\n"
        texts = [
            getattr(i, "text", None) for i in turn.items if type(i).__name__ == "AssistantText"
        ]
        assert texts == ["Looking.", "Done: a.py prints A."]
        assert [r.is_error for r in _results(turn)] == [False, False]
        assert turn.usage.calls == 1 and turn.usage.prompt_tokens == 50
        # Only pre_send is recorded, once per step (kun.runtime.loop).
        stages = [
            (e.stage, e.step)
            for e in JsonlEventStore(h.home).read(h.thread_id)
            if isinstance(e, ev.PipelineStage)
        ]
        assert stages == [("pre_send", 0), ("pre_send", 1), ("pre_send", 2)]
        requests = h.model.requests
        assert len(requests) == 3
        assert [type(i).__name__ for i in requests[1].history][-2:] == ["ToolCall", "ToolResult"]
    on_disk = replay(JsonlEventStore(h.home).read(h.thread_id))
    assert on_disk.turns == h.state().turns


async def test_parallel_reads_are_persisted_in_call_order(tmp_path: Path) -> None:
    script = [
        calls(
            ("read_file", {"path": "b.py"}),
            ("grep", {"pattern": "print"}),
            ("read_file", {"path": "a.py"}),
        ),
        text_reply("ok"),
    ]
    async with harness(tmp_path, script) as h:
        turn = await h.run("read both")
        order = [i.call_id for i in turn.items if isinstance(i, ToolCall)]
        assert [r.call_id for r in _results(turn)] == order
        assert "print('b')" in _results(turn)[0].output


async def test_an_unknown_tool_is_a_recoverable_error_with_guidance(tmp_path: Path) -> None:
    script = [tool_reply("reed_file", {"path": "a.py"}), text_reply("sorry")]
    async with harness(tmp_path, script) as h:
        turn = await h.run("read")
        (result,) = _results(turn)
        assert result.is_error and result.code == "unknown_tool"
        assert "read_file" in result.output
        assert turn.status == "completed"


async def test_a_crashing_tool_does_not_kill_the_turn(tmp_path: Path) -> None:
    script = [tool_reply("crash"), text_reply("the tool failed")]
    async with harness(tmp_path, script, tools=host_with(CrashTool())) as h:
        turn = await h.run("crash")
        (result,) = _results(turn)
        assert result.code == "tool_execution_failed" and "ZeroDivisionError" in result.output
        assert turn.status == "completed"
        call = next(i for i in turn.items if isinstance(i, ToolCall))
        assert call.status == "failed"


async def test_a_workspace_escape_is_refused(tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("top secret")
    script = [tool_reply("read_file", {"path": "../secret.txt"}), text_reply("cannot")]
    async with harness(tmp_path, script) as h:
        turn = await h.run("read the secret")
        (result,) = _results(turn)
        assert result.is_error and result.code == "outside_workspace"
        assert "top secret" not in result.output


async def test_a_provider_error_fails_the_turn_with_an_error_item(tmp_path: Path) -> None:
    async with harness(tmp_path, []) as h:
        turn = await h.run("hello")
        assert turn.status == "failed" and turn.error is not None
        assert turn.error.code == "script_exhausted"
        assert any(isinstance(i, ErrorItem) for i in turn.items)


async def test_the_step_limit_fails_the_turn(tmp_path: Path) -> None:
    script = [tool_reply("list_dir", {}, call_id=f"c{i}") for i in range(5)]
    async with harness(tmp_path, script, limits=TurnLimits(max_steps=2)) as h:
        turn = await h.run("loop")
        assert turn.status == "failed" and turn.error is not None
        assert turn.error.code == "turn_step_limit"
        assert len(h.model.requests) == 2


async def test_output_truncation_leaves_a_warning(tmp_path: Path) -> None:
    async with harness(tmp_path, [text_reply("cut", stop_reason="length")]) as h:
        turn = await h.run("write a novel")
        assert turn.status == "completed"
        assert [getattr(i, "code", None) for i in turn.items][-1] == "output_truncated"


async def test_unattended_turns_get_no_user_input_tool_and_a_no_dialog_note(
    tmp_path: Path,
) -> None:
    async with harness(tmp_path, [text_reply("ok"), text_reply("ok")]) as h:
        await h.run("one", disable_user_input=True)
        await h.run("two")
        unattended, attended = h.model.requests
        assert "request_user_input" not in [t.name for t in unattended.tools]
        assert "request_user_input" in [t.name for t in attended.tools]
        assert "unattended" in (unattended.context_instructions or "")
        assert "unattended" not in (attended.context_instructions or "")


async def test_every_invariant_holds_on_the_written_log(tmp_path: Path) -> None:
    script = [
        calls(("read_file", {"path": "a.py"}), ("read_file", {"path": "nope.py"})),
        tool_reply("bash", {"command": "echo hi"}, call_id="c3"),
        text_reply("done"),
    ]
    async with harness(tmp_path, script) as h:
        turn_id = await h.service.start_turn(h.thread_id, "go")
        with anyio.fail_after(10):
            async for event in h.service.recorder.subscribe(h.thread_id):
                if isinstance(event, ev.ApprovalRequested):
                    await h.service.answer_approval(event.approval_id, "approved")
                    break
            await h.service.wait_turn(h.thread_id, turn_id)
    events = list(JsonlEventStore(h.home).read(h.thread_id))
    state = replay(events)
    (turn,) = state.turns
    assert turn.settled and not state.pending_approvals
    for call in (i for i in turn.items if isinstance(i, ToolCall)):
        assert [r.call_id for r in _results(turn)].count(call.call_id) == 1
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    decoded = [msgspec.json.decode(msgspec.json.encode(e), type=ev.Event) for e in events]
    assert decoded == events
    assert isinstance(turn.items[0], UserMessage)


async def test_hooks_run_in_order_and_a_failing_hook_changes_nothing(tmp_path: Path) -> None:
    seen: list[tuple[str, str, bool]] = []

    class Hooks:
        def __init__(self, service: object) -> None:
            self.service = service

        async def bookkeeping(self, run: object, status: str) -> None:
            running = self.service.running_turn(run.thread_id) is not None  # type: ignore[attr-defined]
            seen.append(("bookkeeping", status, running))

        async def turn_ended(self, run: object, status: str) -> None:
            running = self.service.running_turn(run.thread_id) is not None  # type: ignore[attr-defined]
            seen.append(("turn_ended", status, running))
            raise RuntimeError("observers may fail")

    async with harness(tmp_path, [text_reply("hi")]) as h:
        h.service.hooks = (Hooks(h.service),)
        turn = await h.run("hello")
        with anyio.fail_after(5):
            while len(seen) < 2:
                await anyio.lowlevel.checkpoint()
    assert turn.status == "completed"
    assert seen == [("bookkeeping", "completed", True), ("turn_ended", "completed", False)]


async def test_the_third_identical_call_is_suppressed_and_a_write_resets_reads(
    tmp_path: Path,
) -> None:
    read = ("read_file", {"path": "a.py"})
    write = ("write_file", {"path": "a.py", "content": "print('z')\n"})
    script = [
        calls(read, prefix="s1"),
        calls(read, prefix="s2"),
        calls(write, prefix="s3"),
        calls(read, prefix="s4"),
        calls(read, prefix="s5"),
        calls(read, prefix="s6"),
        text_reply("stopped"),
    ]
    async with harness(tmp_path, script) as h:
        turn = await h.run("loop on a.py")
        codes = [r.code for r in _results(turn)]
        assert codes == [None, None, None, None, None, "tool_storm_suppressed"]
        assert turn.storms_suppressed == 1
        assert "print('z')" in _results(turn)[4].output
