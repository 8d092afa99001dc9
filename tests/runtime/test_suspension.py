"""Durable suspension in process: a turn a stopped kun left waiting for an
approval or an answer is left open by reconciliation, refused as a reason
to start another turn, re-armed, and resumed from the log by the answer —
the approved call runs once, a denied one does not run, the rest of its
step runs after it, and the turn goes on to its end."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from kun.app.session import open_service
from kun.app.threadops import rewind_before
from kun.contracts.items import ToolResult
from kun.domain.history import ModelEntry, repair_history
from kun.model.scripted import ScriptedModelClient, text_reply
from kun.runtime.errors import ThreadBusy, TurnWaiting
from kun.runtime.rearm import rearm
from kun.runtime.reconcile import reconcile_orphaned_turns
from kun.store import encode_line, log_path
from kun.testing.logbuilder import LogBuilder

pytestmark = pytest.mark.anyio
THREAD = "t_waiting"
FAILSAFE = 20


def _write_log(home: Path, workspace: Path, *, question: bool = False) -> LogBuilder:
    """A turn stopped while its second call waited: the first call of the
    step ran; a third call after it has not started."""
    b = LogBuilder(THREAD)
    b.create(workspace=str(workspace))
    b.start_turn("note it, deploy, then list")
    b.assistant_text(["I'll write the notes, then deploy."])
    write = b.tool_call("write_file", {"path": "notes.txt", "content": "x"}, call_id="call_w")
    if question:
        ask = b.tool_call("request_user_input", {"question": "Which env?"}, call_id="call_q")
    else:
        deploy = b.tool_call("bash", {"command": "echo deployed >> deployed.txt"}, call_id="call_b")
    b.tool_call("list_dir", {"path": "."}, call_id="call_l")
    b.start_tool(write)
    (workspace / "notes.txt").write_text("x")
    b.finish_tool(write, "Wrote 1 bytes to notes.txt")
    if question:
        b.start_tool(ask)
        b.ask_user("Which env?", ("staging", "production"))
    else:
        b.request_approval(deploy, "bash echo deployed >> deployed.txt")
    path = log_path(home, THREAD)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"".join(encode_line(e) for e in b.events))
    return b


def _shown(model: ScriptedModelClient) -> dict[str, str | None]:
    return {
        result.call_id: result.code
        for entry in repair_history(model.requests[-1].history)
        if isinstance(entry, ModelEntry)
        for result in entry.results
    }


@pytest.mark.parametrize("decision", ["approved", "denied"])
async def test_an_answer_resumes_the_turn_from_the_log(tmp_path: Path, decision: str) -> None:
    home, workspace = tmp_path / "home", tmp_path / "ws"
    workspace.mkdir()
    _write_log(home, workspace)
    model = ScriptedModelClient([text_reply("Deployed and listed.")])
    async with open_service(home, model) as service:
        waiting: list[str] = []
        assert await reconcile_orphaned_turns(service, waiting=waiting) == []
        assert waiting == [THREAD]
        turn = service.state(THREAD).turns[0]
        assert turn.status == "running"
        with pytest.raises(TurnWaiting, match="waiting for approval of bash"):
            await service.start_turn(THREAD, "something else")
        with pytest.raises(TurnWaiting):
            await rewind_before(service, THREAD, "1")
        assert await rearm(service, THREAD) == turn.turn_id
        assert await rearm(service, THREAD) is None
        (approval,) = service.state(THREAD).pending_approvals
        with pytest.raises(ThreadBusy):
            await service.start_turn(THREAD, "something else")
        await service.answer_approval(approval, decision)
        with anyio.fail_after(FAILSAFE):
            settled = await service.wait_turn(THREAD, turn.turn_id)
    assert settled.status == "completed"
    ran = (workspace / "deployed.txt").read_text() if decision == "approved" else None
    assert ran == ("deployed\n" if decision == "approved" else None)
    assert (workspace / "deployed.txt").exists() == (decision == "approved")
    code = None if decision == "approved" else "denied_by_user"
    assert _shown(model) == {"call_w": None, "call_b": code, "call_l": None}
    results = [i.call_id for i in settled.items if isinstance(i, ToolResult)]
    assert results == ["call_w", "call_b", "call_l"]


async def test_a_question_is_asked_again_and_its_answer_is_the_result(tmp_path: Path) -> None:
    home, workspace = tmp_path / "home", tmp_path / "ws"
    workspace.mkdir()
    _write_log(home, workspace, question=True)
    model = ScriptedModelClient([text_reply("Staging it is.")])
    async with open_service(home, model) as service:
        await reconcile_orphaned_turns(service)
        turn_id = await rearm(service, THREAD)
        assert turn_id is not None
        (request,) = service.state(THREAD).pending_user_inputs
        await service.answer_user_input(request, "staging")
        with anyio.fail_after(FAILSAFE):
            settled = await service.wait_turn(THREAD, turn_id)
    assert settled.status == "completed"
    answer = next(i for i in settled.items if isinstance(i, ToolResult) and i.call_id == "call_q")
    assert answer.output == "The user answered: staging"


async def test_a_re_armed_turn_can_be_interrupted(tmp_path: Path) -> None:
    home, workspace = tmp_path / "home", tmp_path / "ws"
    workspace.mkdir()
    _write_log(home, workspace)
    async with open_service(home, ScriptedModelClient([])) as service:
        await reconcile_orphaned_turns(service)
        turn_id = await rearm(service, THREAD)
        assert turn_id is not None
        await service.interrupt_turn(THREAD, turn_id)
        state = service.state(THREAD)
    assert state.turns[0].status == "aborted"
    assert state.pending_approvals == ()
    assert not (workspace / "deployed.txt").exists()


async def test_a_stop_while_waiting_leaves_the_turn_waiting(tmp_path: Path) -> None:
    """The service closing (the process stopping) under a waiting turn
    leaves it open; the next start re-arms it again."""
    home, workspace = tmp_path / "home", tmp_path / "ws"
    workspace.mkdir()
    _write_log(home, workspace)
    async with open_service(home, ScriptedModelClient([])) as service:
        await reconcile_orphaned_turns(service)
        assert await rearm(service, THREAD) is not None
    model = ScriptedModelClient([text_reply("Done.")])
    async with open_service(home, model) as service:
        waiting: list[str] = []
        assert await reconcile_orphaned_turns(service, waiting=waiting) == []
        assert waiting == [THREAD]
        turn_id = await rearm(service, THREAD)
        assert turn_id is not None
        (approval,) = service.state(THREAD).pending_approvals
        await service.answer_approval(approval, "approved")
        with anyio.fail_after(FAILSAFE):
            assert (await service.wait_turn(THREAD, turn_id)).status == "completed"
    assert (workspace / "deployed.txt").read_text() == "deployed\n"
