"""Steering, interrupts, gates, rewind, fork and reconciliation."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from kun.app.session import open_service
from kun.contracts import events as ev
from kun.contracts.items import Approval, AssistantText, ToolCall, ToolResult, UserMessage
from kun.contracts.model import CompletedChunk, ModelRequest, ModelStreamChunk, TextDeltaChunk
from kun.domain.reduce import replay
from kun.model.scripted import text_reply, tool_reply
from kun.runtime.errors import AnswerConflict, SteeringFull, ThreadBusy, TurnNotRunning
from kun.runtime.reconcile import reconcile_orphaned_turns
from kun.store.jsonl import JsonlEventStore
from kun.testing.logbuilder import LogBuilder
from tests.runtime.support import Harness, SlowTool, harness, host_with

pytestmark = pytest.mark.anyio


async def _first(h: Harness, kind: type[ev.EventBase], thread_id: str | None = None) -> ev.Event:
    """The first event of ``kind`` the thread's log gets, as a follower sees it."""
    with anyio.fail_after(5):
        async for event in h.service.recorder.subscribe(thread_id or h.thread_id):
            if isinstance(event, kind):
                return event
    raise AssertionError(f"no {kind.__name__}")


def _log(h: Harness) -> list[ev.Event]:
    return list(JsonlEventStore(h.home).read(h.thread_id))


async def test_steering_lands_before_the_next_request_and_never_leaks(tmp_path: Path) -> None:
    release = anyio.Event()
    started = anyio.Event()
    script = [tool_reply("slow"), text_reply("noted"), text_reply("next turn")]
    tools = host_with(SlowTool(release=release, started=started))
    async with harness(tmp_path, script, tools=tools) as h:
        turn_id = await h.service.start_turn(h.thread_id, "work")
        await started.wait()
        await h.service.steer_turn(h.thread_id, turn_id, "also check b.py")
        release.set()
        turn = await h.service.wait_turn(h.thread_id, turn_id)
        steered = [i for i in turn.items if isinstance(i, UserMessage) and i.steered]
        assert [m.text for m in steered] == ["also check b.py"]
        assert turn.steered == 1
        second = h.model.requests[1].history
        assert isinstance(second[-1], UserMessage) and second[-1].text == "also check b.py"
        with pytest.raises(TurnNotRunning):
            await h.service.steer_turn(h.thread_id, turn_id, "too late")
        nxt = await h.run("next")
        assert not any(isinstance(i, UserMessage) and i.steered for i in nxt.items)


async def test_steering_during_the_final_step_gets_one_more_step(tmp_path: Path) -> None:
    streaming = anyio.Event()
    release = anyio.Event()

    async def final_answer(request: ModelRequest) -> AsyncIterator[ModelStreamChunk]:
        yield TextDeltaChunk(text="done, I think")
        streaming.set()
        await release.wait()
        yield CompletedChunk(stop_reason="stop")

    async with harness(tmp_path, [final_answer, text_reply("b.py checked too")]) as h:
        turn_id = await h.service.start_turn(h.thread_id, "work")
        await streaming.wait()
        await h.service.steer_turn(h.thread_id, turn_id, "also check b.py")
        release.set()
        turn = await h.service.wait_turn(h.thread_id, turn_id)
        assert turn.status == "completed"
        assert len(h.model.requests) == 2
        last = h.model.requests[1].history[-1]
        assert isinstance(last, UserMessage) and last.text == "also check b.py"
        texts = [i.text for i in turn.items if isinstance(i, AssistantText)]
        assert texts == ["done, I think", "b.py checked too"]
        with pytest.raises(TurnNotRunning):
            await h.service.steer_turn(h.thread_id, turn_id, "too late")


async def test_steering_is_bounded(tmp_path: Path) -> None:
    started = anyio.Event()
    async with harness(
        tmp_path, [tool_reply("slow")], tools=host_with(SlowTool(started=started))
    ) as h:
        turn_id = await h.service.start_turn(h.thread_id, "work")
        await started.wait()
        for i in range(32):
            await h.service.steer_turn(h.thread_id, turn_id, f"note {i}")
        with pytest.raises(SteeringFull, match="32 entries"):
            await h.service.steer_turn(h.thread_id, turn_id, "one more")
        await h.service.interrupt_turn(h.thread_id, turn_id)


async def test_interrupt_while_streaming_keeps_what_arrived(tmp_path: Path) -> None:
    async def chunks() -> AsyncIterator[ModelStreamChunk]:
        for i in range(10_000):
            yield TextDeltaChunk(text=f"word{i} ")
            await anyio.sleep(0.001)

    def endless(request: ModelRequest) -> AsyncIterator[ModelStreamChunk]:
        return chunks()

    async with harness(tmp_path, [endless]) as h:
        turn_id = await h.service.start_turn(h.thread_id, "talk")
        await _first(h, ev.AssistantTextDelta)
        await h.service.interrupt_turn(h.thread_id, turn_id)
        turn = h.turn(turn_id)
        assert turn.status == "aborted"
        text = next(i for i in turn.items if isinstance(i, AssistantText))
        assert text.status == "aborted" and text.text.startswith("word0 ")
        assert isinstance(_log(h)[-1], ev.TurnAborted)
        assert replay(_log(h)).turns == h.state().turns


async def test_interrupt_during_a_tool_seals_the_call(tmp_path: Path) -> None:
    started = anyio.Event()
    tools = host_with(SlowTool(started=started))
    async with harness(tmp_path, [tool_reply("slow")], tools=tools) as h:
        turn_id = await h.service.start_turn(h.thread_id, "wait")
        await started.wait()
        with anyio.fail_after(5):
            await h.service.interrupt_turn(h.thread_id, turn_id)
        turn = h.turn(turn_id)
        call = next(i for i in turn.items if isinstance(i, ToolCall))
        assert turn.status == "aborted" and call.status == "aborted"
        assert h.service.running_turn(h.thread_id) is None
        result = next(i for i in turn.items if isinstance(i, ToolResult))
        assert result.call_id == call.call_id and result.code == "interrupted"


async def test_interrupt_while_waiting_for_approval_cancels_the_gate(tmp_path: Path) -> None:
    script = [tool_reply("write_file", {"path": "c.py", "content": "x"})]
    async with harness(tmp_path, script, policy="auto") as h:
        turn_id = await h.service.start_turn(h.thread_id, "write")
        requested = await _first(h, ev.ApprovalRequested)
        assert isinstance(requested, ev.ApprovalRequested)
        approval_id = requested.approval_id
        with anyio.fail_after(5):
            await h.service.interrupt_turn(h.thread_id, turn_id, discard=False)
        approval = next(i for i in h.turn(turn_id).items if isinstance(i, Approval))
        assert approval.status == "cancelled"
        assert not h.service.approvals.pending_ids()
        assert not (h.workspace / "c.py").exists()
        with pytest.raises(AnswerConflict):
            await h.service.answer_approval(approval_id, "approved")


async def test_a_second_answer_to_an_approval_is_a_conflict(tmp_path: Path) -> None:
    script = [tool_reply("write_file", {"path": "c.py", "content": "x"}), text_reply("written")]
    async with harness(tmp_path, script, policy="auto") as h:
        turn_id = await h.service.start_turn(h.thread_id, "write")
        requested = await _first(h, ev.ApprovalRequested)
        assert isinstance(requested, ev.ApprovalRequested)
        approval_id = requested.approval_id
        await h.service.answer_approval(approval_id, "approved")
        with pytest.raises(AnswerConflict):
            await h.service.answer_approval(approval_id, "denied")
        turn = await h.service.wait_turn(h.thread_id, turn_id)
        assert turn.status == "completed" and (h.workspace / "c.py").read_text() == "x"


async def test_a_denied_approval_is_an_error_result_the_model_reads(tmp_path: Path) -> None:
    script = [tool_reply("bash", {"command": "rm -rf /"}), text_reply("ok, I won't")]
    async with harness(tmp_path, script, policy="always") as h:
        turn_id = await h.service.start_turn(h.thread_id, "clean up")
        requested = await _first(h, ev.ApprovalRequested)
        assert isinstance(requested, ev.ApprovalRequested)
        await h.service.answer_approval(requested.approval_id, "denied", "no")
        turn = await h.service.wait_turn(h.thread_id, turn_id)
        result = next(i for i in turn.items if isinstance(i, ToolResult))
        assert result.code == "denied_by_user" and turn.status == "completed"


async def test_rewind_is_refused_while_running_then_hides_and_continues(tmp_path: Path) -> None:
    started = anyio.Event()
    release = anyio.Event()
    script = [text_reply("one"), tool_reply("slow"), text_reply("two"), text_reply("three")]
    tools = host_with(SlowTool(release=release, started=started))
    async with harness(tmp_path, script, tools=tools) as h:
        first = await h.run("first")
        second_id = await h.service.start_turn(h.thread_id, "second")
        await started.wait()
        with pytest.raises(ThreadBusy):
            await h.service.rewind_thread(h.thread_id, second_id)
        release.set()
        await h.service.wait_turn(h.thread_id, second_id)
        await h.service.rewind_thread(h.thread_id, second_id)
        third = await h.run("third")
        assert [t.turn_id for t in h.state().visible_turns] == [first.turn_id, third.turn_id]
        history = h.model.requests[-1].history
        assert "second" not in [getattr(i, "text", None) for i in history]


async def test_fork_then_continue_both(tmp_path: Path) -> None:
    script = [text_reply("base"), text_reply("on the source"), text_reply("on the fork")]
    async with harness(tmp_path, script) as h:
        await h.run("base turn")
        fork_id = await h.service.fork_thread(h.thread_id)
        await h.run("source again")
        fork_turn_id = await h.service.start_turn(fork_id, "fork turn")
        fork_turn = await h.service.wait_turn(fork_id, fork_turn_id)
        assert fork_turn.status == "completed"
        fork_state = h.service.state(fork_id)
        assert fork_state.forked_from is not None
        assert [len(s.turns) for s in (h.state(), fork_state)] == [2, 2]
        last_history = h.model.requests[-1].history
        assert "source again" not in [getattr(i, "text", None) for i in last_history]


async def test_reconciliation_settles_orphans_and_the_thread_works_again(tmp_path: Path) -> None:
    home = tmp_path / "home"
    b = LogBuilder("t_orphan")
    b.create(workspace=str(tmp_path))
    b.start_turn("deploy")
    call = b.tool_call("bash", {"command": "deploy.sh"})
    b.start_tool(call)
    path = home / "threads" / "t_orphan" / "events.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"".join(ev_line(e) for e in b.events))
    from kun.model.scripted import ScriptedModelClient

    async with open_service(home, ScriptedModelClient([text_reply("hello again")])) as service:
        assert await reconcile_orphaned_turns(service) == ["t_orphan"]
        assert await reconcile_orphaned_turns(service) == []
        turn = service.state("t_orphan").turns[0]
        assert turn.status == "failed" and turn.error is not None
        assert turn.error.code == "orphaned"
        bash = next(i for i in turn.items if isinstance(i, ToolCall))
        assert bash.status == "unknown_after_crash"
        result = next(i for i in turn.items if isinstance(i, ToolResult))
        assert result.code == "unknown_after_crash" and "may or may not" in result.output
        turn_id = await service.start_turn("t_orphan", "again")
        assert (await service.wait_turn("t_orphan", turn_id)).status == "completed"


def ev_line(event: ev.Event) -> bytes:
    import msgspec

    return msgspec.json.encode(event) + b"\n"


async def test_a_new_turn_settles_an_orphan_left_in_the_log_first(tmp_path: Path) -> None:
    home = tmp_path / "home"
    b = LogBuilder("t_orphan")
    b.create(workspace=str(tmp_path))
    b.start_turn("first, then the process died")
    b.assistant_text(["half an ans"], complete=False)
    path = home / "threads" / "t_orphan" / "events.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"".join(ev_line(e) for e in b.events))
    from kun.model.scripted import ScriptedModelClient

    async with open_service(home, ScriptedModelClient([text_reply("fine")])) as service:
        turn_id = await service.start_turn("t_orphan", "again")
        assert (await service.wait_turn("t_orphan", turn_id)).status == "completed"
        first, second = service.state("t_orphan").turns
        assert first.status == "failed" and first.error is not None
        assert first.error.code == "orphaned"
        assert second.turn_id == turn_id
        assert service.state("t_orphan").status == "completed"
