"""The loop acts on the round-outcome decisions (SPEC §7, kun.runtime.rounds):
an empty reply after a file change is recovered, then fails; a normal answer
costs no extra request; the decisions are in the log for ``kun replay``."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from kun.contracts.items import ErrorItem, WarningItem
from kun.contracts.model import CompletedChunk, ModelRequest
from kun.contracts.threads import Goal, ThreadSettings
from kun.domain.recovery import FINAL_ANSWER_CODE, instruction_for
from kun.domain.repetition import RepetitionSettings, recovery_instruction
from kun.model.scripted import ScriptedModelClient, text_reply, tool_reply
from kun.runtime.recorder import EventRecorder
from kun.runtime.service import TurnService
from kun.store.jsonl import JsonlEventStore
from kun.tools.host import default_host as builtin_host
from tests.cli_support import invoked
from tests.runtime.support import harness

pytestmark = pytest.mark.anyio

EDIT = tool_reply("edit_file", {"path": "a.py", "old_string": "'a'", "new_string": "'A'"})
EMPTY = [CompletedChunk(stop_reason="stop")]
SETTINGS = RepetitionSettings()


def _notes(request: ModelRequest) -> str:
    """The notes after the history; a recovery instruction is the last."""
    return request.context_instructions or ""


async def test_an_empty_reply_after_a_file_change_is_recovered_then_fails(
    tmp_path: Path,
) -> None:
    async with harness(tmp_path, [EDIT, EMPTY, EMPTY, EMPTY]) as h:
        turn = await h.run("make a.py print A")
        assert turn.status == "failed"
        errors = [i for i in turn.items if isinstance(i, ErrorItem)]
        assert [e.code for e in errors] == ["empty_post_tool_continuation"]
        warnings = [i.code for i in turn.items if isinstance(i, WarningItem)]
        assert warnings == ["empty_post_tool_reply", FINAL_ANSWER_CODE]
        first, after_edit, recovery, final = h.model.requests
        assert not _notes(after_edit).endswith(
            instruction_for("empty_post_tool_reply", 1, SETTINGS)
        )
        assert _notes(recovery).endswith(instruction_for("empty_post_tool_reply", 1, SETTINGS))
        assert recovery.tools == first.tools and recovery.tools
        assert _notes(final).endswith(instruction_for("empty_post_tool_reply", 2, SETTINGS))
        assert final.tools == ()
    result = await invoked(["replay", h.thread_id, "--home", str(h.home)])
    assert result.exit_code == 0, result.output
    assert "empty_post_tool_reply" in result.output
    assert "empty_post_tool_continuation" in result.output


async def test_a_recovered_reply_completes_the_turn(tmp_path: Path) -> None:
    script = [EDIT, EMPTY, text_reply("a.py now prints A.")]
    async with harness(tmp_path, script) as h:
        turn = await h.run("make a.py print A")
        assert turn.status == "completed"
        assert len(h.model.requests) == 3
        # The instruction was answered: the next request would not send it again.
        assert [i.code for i in turn.items if isinstance(i, WarningItem)] == [
            "empty_post_tool_reply"
        ]


async def test_a_normal_answer_completes_with_no_extra_request(tmp_path: Path) -> None:
    async with harness(tmp_path, [EDIT, text_reply("Done.")]) as h:
        turn = await h.run("make a.py print A")
        assert turn.status == "completed"
        assert len(h.model.requests) == 2
        assert not [i for i in turn.items if isinstance(i, WarningItem)]


async def test_an_empty_reply_without_a_file_change_completes(tmp_path: Path) -> None:
    script = [tool_reply("read_file", {"path": "a.py"}), EMPTY]
    async with harness(tmp_path, script) as h:
        turn = await h.run("read a.py")
        assert turn.status == "completed"
        assert len(h.model.requests) == 2


async def test_a_truncated_answer_still_warns_and_completes(tmp_path: Path) -> None:
    async with harness(tmp_path, [text_reply("cut", stop_reason="length")]) as h:
        turn = await h.run("write a lot")
        assert turn.status == "completed" and turn.stop_reason == "length"
        assert [i.code for i in turn.items if isinstance(i, WarningItem)] == ["output_truncated"]
        assert len(h.model.requests) == 1


async def test_the_repetition_settings_reach_a_goal_across_its_turns(tmp_path: Path) -> None:
    """``[runtime] repetition_max_repeats`` (here 1) reaches the loop, and the
    tracker outlives a goal's turn: turn 2 repeating turn 1 is caught."""
    same = "I'll keep working on the goal now."
    model = ScriptedModelClient([text_reply(same)] * 3)
    settings = RepetitionSettings(max_repeats=1)
    store = JsonlEventStore(tmp_path / "home")
    async with store, EventRecorder(store) as recorder, anyio.create_task_group() as tg:
        service = TurnService(recorder, tg, model=model, tools=builtin_host(), repetition=settings)
        thread = await service.create_thread(
            ThreadSettings(workspace=str(tmp_path), goal=Goal(objective="ship it"))
        )
        with anyio.fail_after(10):
            first = await service.wait_turn(thread, await service.start_turn(thread, "go"))
            second = await service.wait_turn(thread, await service.start_turn(thread, "go on"))
        tg.cancel_scope.cancel()
    assert first.status == "completed" and len(first.items) == 2
    assert second.status == "completed"
    warnings = [i for i in second.items if isinstance(i, WarningItem)]
    assert [w.code for w in warnings] == ["goal_repetition", "goal_repetition_stop"]
    assert _notes(model.requests[2]).endswith(recovery_instruction(1, 1))


MISSING = tool_reply("read_file", {"path": "missing.py"})
ANNOUNCE = "I'll fix the path and read it again."


async def test_a_stall_after_a_failed_tool_is_recovered_then_fails(tmp_path: Path) -> None:
    """SPEC §7 step 4: after a failed call, a reply that only announces the
    next move gets the recovery instruction twice, then fails the turn."""
    script = [MISSING, text_reply(ANNOUNCE), text_reply(ANNOUNCE), text_reply(ANNOUNCE)]
    async with harness(tmp_path, script) as h:
        turn = await h.run("read missing.py")
        assert turn.status == "failed"
        assert turn.error is not None and turn.error.code == "post_tool_failure_stalled"
        warnings = [i for i in turn.items if isinstance(i, WarningItem)]
        assert [w.code for w in warnings] == ["post_tool_failure", "post_tool_failure"]
        instruction = instruction_for("post_tool_failure", 1, SETTINGS)
        _, after_failure, first, second = h.model.requests
        assert not _notes(after_failure).endswith(instruction)
        assert _notes(first).endswith(instruction) and _notes(second).endswith(instruction)
        assert first.tools == after_failure.tools and first.tools


async def test_acting_after_the_recovery_instruction_completes(tmp_path: Path) -> None:
    script = [
        MISSING,
        text_reply(ANNOUNCE),
        tool_reply("read_file", {"path": "a.py"}),
        text_reply("a.py prints a."),
    ]
    async with harness(tmp_path, script) as h:
        turn = await h.run("read missing.py")
        assert turn.status == "completed"
        assert [i.code for i in turn.items if isinstance(i, WarningItem)] == ["post_tool_failure"]
        assert len(h.model.requests) == 4


async def test_a_conclusion_after_a_failed_tool_completes_at_once(tmp_path: Path) -> None:
    script = [MISSING, text_reply("missing.py does not exist, so there is nothing to read.")]
    async with harness(tmp_path, script) as h:
        turn = await h.run("read missing.py")
        assert turn.status == "completed" and len(h.model.requests) == 2
        assert not [i for i in turn.items if isinstance(i, WarningItem)]
