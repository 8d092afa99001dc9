"""Sub-agents (``delegate_task``): a task runs as a turn on a hidden side
thread linked to the call, and its answer is the call's result; batches
run at once under the semaphore; a sub-agent's tools and permissions never
exceed its parent's; its approvals are answered where the parent's are;
interrupting the parent interrupts it; a crash leaves nothing stuck."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from kun.app.session import open_service
from kun.contracts import events as ev
from kun.contracts.items import Approval, AssistantText, ToolCall, ToolResult, UserMessage
from kun.contracts.model import ModelRequest, ModelStreamChunk
from kun.contracts.threads import ApprovalPolicy, SideLink, ThreadSettings
from kun.domain.state import ThreadState, TurnState
from kun.model.scripted import ScriptedModelClient, text_reply, tool_reply
from kun.runtime.delegation import (
    DEFAULT_AGENT_TOOLS,
    SUBAGENT_PROMPT,
    AgentProfile,
    Delegation,
)
from kun.runtime.mirror import NOT_FOR_AGENT
from kun.runtime.reconcile import reconcile_orphaned_turns
from kun.runtime.service import TurnService
from kun.store import encode_line, log_path
from kun.testing.logbuilder import LogBuilder

from .support import calls

pytestmark = pytest.mark.anyio
FAILSAFE = 20


def _last_user(request: ModelRequest) -> str:
    return next((i.text for i in reversed(request.history) if isinstance(i, UserMessage)), "")


def _is_child(request: ModelRequest) -> bool:
    return SUBAGENT_PROMPT in request.system_prompt


def _results(turn: TurnState) -> list[ToolResult]:
    return [i for i in turn.items if isinstance(i, ToolResult)]


def _answer(turn: TurnState) -> str:
    return next(i.text for i in reversed(turn.items) if isinstance(i, AssistantText))


async def _thread(service: TurnService, workspace: Path, policy: ApprovalPolicy) -> str:
    return await service.create_thread(
        ThreadSettings(workspace=str(workspace), approval_policy=policy)
    )


async def _run(service: TurnService, thread: str, text: str) -> TurnState:
    turn_id = await service.start_turn(thread, text)
    with anyio.fail_after(FAILSAFE):
        return await service.wait_turn(thread, turn_id)


def _side_threads(service: TurnService, state: ThreadState) -> list[str]:
    return [
        i.side_thread
        for t in state.turns
        for i in t.items
        if isinstance(i, ToolCall) and i.side_thread is not None
    ]


async def test_a_task_runs_on_a_hidden_side_thread_and_its_answer_is_the_result(
    tmp_path: Path,
) -> None:
    seen: list[ModelRequest] = []

    def respond(request: ModelRequest) -> list[ModelStreamChunk]:
        seen.append(request)
        if _is_child(request):
            return text_reply(f"answer to: {_last_user(request)}")
        if any(isinstance(i, ToolResult) for i in request.history):
            return text_reply("The helper found it.")
        return tool_reply("delegate_task", {"task": "Where is parse() defined?"})

    model = ScriptedModelClient(respond)
    async with open_service(tmp_path / "home", model) as service:
        service.delegation = Delegation(service)
        thread = await _thread(service, tmp_path, "on-request")
        turn = await _run(service, thread, "find parse")
        assert turn.status == "completed"
        (result,) = _results(turn)
        assert (result.is_error, result.output) == (False, "answer to: Where is parse() defined?")
        (side,) = _side_threads(service, service.state(thread))
        child = await service.recorder.view(side)
        settings = child.settings
        assert settings.hidden and settings.parent_thread_id == thread
        link = settings.side_link
        assert link is not None
        call = next(i for i in turn.items if isinstance(i, ToolCall))
        assert (link.thread_id, link.turn_id, link.call_id) == (thread, turn.turn_id, call.call_id)
        assert (link.depth, link.agent, link.ceilings) == (1, None, ("on-request",))
        assert link.tools == tuple(sorted(DEFAULT_AGENT_TOOLS))
        assert child.turns[0].status == "completed"
        child_request = next(r for r in seen if _is_child(r))
        assert sorted(s.name for s in child_request.tools) == sorted(DEFAULT_AGENT_TOOLS)
        parent_request = next(r for r in seen if not _is_child(r))
        assert "delegate_task" in {s.name for s in parent_request.tools}
        assert side not in service.recorder.store.list_threads() or child.settings.hidden


async def test_a_batch_runs_at_once_bounded_by_the_semaphore_and_keeps_call_order(
    tmp_path: Path,
) -> None:
    running = 0
    most = 0
    gate = anyio.Event()
    tasks = [f"task {n}" for n in range(5)]

    async def child(request: ModelRequest) -> AsyncIterator[ModelStreamChunk]:
        nonlocal running, most
        running += 1
        most = max(most, running)
        if most == 2:
            gate.set()
        await gate.wait()
        await anyio.sleep(0.01)
        running -= 1
        for chunk in text_reply(f"done: {_last_user(request)}"):
            yield chunk

    def respond(request: ModelRequest) -> object:
        if _is_child(request):
            return child(request)
        if any(isinstance(i, ToolResult) for i in request.history):
            return text_reply("All five are done.")
        return calls(*(("delegate_task", {"task": t}) for t in tasks))

    model = ScriptedModelClient(respond)  # type: ignore[arg-type]
    async with open_service(tmp_path / "home", model) as service:
        service.delegation = Delegation(service, max_parallel=2)
        thread = await _thread(service, tmp_path, "on-request")
        turn = await _run(service, thread, "do five things")
        assert turn.status == "completed"
        assert most == 2
        assert [r.output for r in _results(turn)] == [f"done: {t}" for t in tasks]
        assert len(set(_side_threads(service, service.state(thread)))) == 5


async def test_a_sub_agent_cannot_use_a_tool_it_was_not_given(tmp_path: Path) -> None:
    def respond(request: ModelRequest) -> list[ModelStreamChunk]:
        if _is_child(request):
            if any(isinstance(i, ToolResult) for i in request.history):
                return text_reply("I could not run it.")
            return tool_reply("bash", {"command": "echo hi"})
        if any(isinstance(i, ToolResult) for i in request.history):
            return text_reply("ok")
        return tool_reply("delegate_task", {"task": "run echo"})

    async with open_service(tmp_path / "home", ScriptedModelClient(respond)) as service:
        service.delegation = Delegation(service)
        thread = await _thread(service, tmp_path, "full-auto")
        await _run(service, thread, "go")
        (side,) = _side_threads(service, service.state(thread))
        child = (await service.recorder.view(side)).turns[0]
        (refused,) = _results(child)
        assert (refused.is_error, refused.code) == (True, NOT_FOR_AGENT)


async def test_an_unknown_agent_and_too_deep_a_delegation_are_results_to_act_on(
    tmp_path: Path,
) -> None:
    def respond(request: ModelRequest) -> list[ModelStreamChunk]:
        if any(isinstance(i, ToolResult) for i in request.history):
            return text_reply("ok")
        return tool_reply("delegate_task", {"task": "x", "agent": "nobody"})

    async with open_service(tmp_path / "home", ScriptedModelClient(respond)) as service:
        service.delegation = Delegation(service, agents={"scout": AgentProfile(name="scout")})
        thread = await _thread(service, tmp_path, "on-request")
        turn = await _run(service, thread, "go")
        (result,) = _results(turn)
        assert (result.is_error, result.code) == (True, "unknown_agent")
        assert "scout" in result.output
        assert _side_threads(service, service.state(thread)) == []


@pytest.mark.parametrize("depth", [1, 2])
async def test_a_sub_agent_delegates_only_under_the_depth_limit(tmp_path: Path, depth: int) -> None:
    offered: list[set[str]] = []

    def respond(request: ModelRequest) -> list[ModelStreamChunk]:
        if _is_child(request):
            offered.append({s.name for s in request.tools})
            return text_reply("child done")
        if any(isinstance(i, ToolResult) for i in request.history):
            return text_reply("ok")
        return tool_reply("delegate_task", {"task": "x", "agent": "lead"})

    async with open_service(tmp_path / "home", ScriptedModelClient(respond)) as service:
        lead = AgentProfile(name="lead", tools=("read_file", "delegate_task"))
        service.delegation = Delegation(service, agents={"lead": lead}, max_depth=depth)
        thread = await _thread(service, tmp_path, "on-request")
        await _run(service, thread, "go")
        expected = {"read_file", "delegate_task"} if depth == 2 else {"read_file"}
        assert offered == [expected]


async def test_a_sub_agents_approval_is_asked_in_the_parents_turn_under_both_policies(
    tmp_path: Path,
) -> None:
    """The profile says full-auto; the parent's on-request still asks for
    a command. The question shows in the parent's turn (same id, naming
    the side thread), and answering it there runs the command."""

    def respond(request: ModelRequest) -> list[ModelStreamChunk]:
        if _is_child(request):
            if any(isinstance(i, ToolResult) for i in request.history):
                return text_reply("ran it")
            return tool_reply("bash", {"command": "echo from-child > out.txt"})
        if any(isinstance(i, ToolResult) for i in request.history):
            return text_reply("ok")
        return tool_reply("delegate_task", {"task": "write out.txt", "agent": "doer"})

    doer = AgentProfile(name="doer", tools=("bash",), approval_policy="full-auto")
    async with open_service(tmp_path / "home", ScriptedModelClient(respond)) as service:
        service.delegation = Delegation(service, agents={"doer": doer})
        thread = await _thread(service, tmp_path, "on-request")
        turn_id = await service.start_turn(thread, "go")
        with anyio.fail_after(FAILSAFE):
            while not service.state(thread).pending_approvals:  # noqa: ASYNC110 (another task)
                await anyio.sleep(0.01)
        (pending,) = service.state(thread).pending_approvals
        shown = next(i for i in service.state(thread).turns[-1].items if isinstance(i, Approval))
        (side,) = _side_threads(service, service.state(thread))
        assert (shown.id, shown.side_thread, shown.tool_name) == (pending, side, "bash")
        assert service.state(side).pending_approvals == (pending,)
        await service.answer_approval(pending, "approved")
        with anyio.fail_after(FAILSAFE):
            turn = await service.wait_turn(thread, turn_id)
        assert turn.status == "completed"
        assert (tmp_path / "out.txt").read_text() == "from-child\n"
        approvals = [i for i in turn.items if isinstance(i, Approval)]
        assert [(a.status, a.side_thread) for a in approvals] == [("approved", side)]
        assert not service.state(thread).pending_approvals


async def test_interrupting_the_parent_interrupts_its_sub_agent(tmp_path: Path) -> None:
    child_started = anyio.Event()

    async def stuck(request: ModelRequest) -> AsyncIterator[ModelStreamChunk]:
        child_started.set()
        await anyio.sleep_forever()
        yield text_reply("never")[0]

    def respond(request: ModelRequest) -> object:
        if _is_child(request):
            return stuck(request)
        return tool_reply("delegate_task", {"task": "take forever"})

    async with open_service(tmp_path / "home", ScriptedModelClient(respond)) as service:  # type: ignore[arg-type]
        service.delegation = Delegation(service)
        thread = await _thread(service, tmp_path, "on-request")
        turn_id = await service.start_turn(thread, "go")
        with anyio.fail_after(FAILSAFE):
            await child_started.wait()
            await service.interrupt_turn(thread, turn_id)
            turn = await service.wait_turn(thread, turn_id)
        assert turn.status == "aborted"
        (side,) = _side_threads(service, service.state(thread))
        with anyio.fail_after(FAILSAFE):
            while service.running_turn(side) is not None:  # noqa: ASYNC110 (another task)
                await anyio.sleep(0.01)
        child = await service.recorder.view(side)
        assert child.turns[0].status == "aborted"


async def test_a_crash_leaves_neither_the_call_nor_the_side_thread_waiting(
    tmp_path: Path,
) -> None:
    """The process died while the sub-agent waited for an approval: the
    side thread's turn is orphaned (never re-armed: the call that waited
    for it is gone), and the parent's call is settled like any call that
    was running."""
    home, workspace = tmp_path / "home", tmp_path / "ws"
    workspace.mkdir()
    parent = LogBuilder("t_parent")
    parent.create(workspace=str(workspace))
    parent.start_turn("delegate")
    call = parent.tool_call("delegate_task", {"task": "deploy"}, call_id="call_d")
    parent.start_tool(call)
    parent.emit(
        ev.SubagentStarted,
        turn_id=parent.turn_id,
        item_id=call.id,
        call_id="call_d",
        side_thread="t_child",
    )
    child = LogBuilder("t_child")
    assert parent.turn_id is not None
    link = SideLink(
        thread_id="t_parent",
        turn_id=parent.turn_id,
        call_id="call_d",
        tools=("bash",),
        ceilings=("on-request",),
    )
    child.create(workspace=str(workspace), hidden=True, parent_thread_id="t_parent", link=link)
    child.start_turn("deploy")
    bash = child.tool_call("bash", {"command": "echo deployed"}, call_id="call_b")
    child.request_approval(bash, "bash echo deployed")
    for b in (parent, child):
        path = log_path(home, b.thread_id)
        path.parent.mkdir(parents=True)
        path.write_bytes(b"".join(encode_line(e) for e in b.events))
    async with open_service(home, ScriptedModelClient([])) as service:
        service.delegation = Delegation(service)
        waiting: list[str] = []
        touched = await reconcile_orphaned_turns(service, waiting=waiting)
        assert waiting == []
        assert sorted(touched) == ["t_child", "t_parent"]
        parent_turn = service.state("t_parent").turns[0]
        assert parent_turn.status == "failed"
        (result,) = _results(parent_turn)
        assert result.code == "unknown_after_crash"
        child_turn = service.state("t_child").turns[0]
        assert child_turn.status == "failed"
        assert child_turn.error is not None and child_turn.error.code == "orphaned"


async def test_rewinding_the_parent_with_files_undoes_what_its_sub_agent_wrote(
    tmp_path: Path,
) -> None:
    (tmp_path / "notes.txt").write_text("before\n")

    def respond(request: ModelRequest) -> list[ModelStreamChunk]:
        if _is_child(request):
            if any(isinstance(i, ToolResult) for i in request.history):
                return text_reply("wrote both")
            return calls(
                ("write_file", {"path": "notes.txt", "content": "after\n"}),
                ("write_file", {"path": "new.txt", "content": "new\n"}),
            )
        if any(isinstance(i, ToolResult) for i in request.history):
            return text_reply("ok")
        return tool_reply("delegate_task", {"task": "edit", "agent": "editor"})

    editor = AgentProfile(name="editor", tools=("write_file",))
    async with open_service(tmp_path / "home", ScriptedModelClient(respond)) as service:
        service.delegation = Delegation(service, agents={"editor": editor})
        thread = await _thread(service, tmp_path, "on-request")
        turn = await _run(service, thread, "edit via a helper")
        assert (tmp_path / "notes.txt").read_text() == "after\n"
        await service.rewind_thread(thread, turn.turn_id, files=True)
        assert (tmp_path / "notes.txt").read_text() == "before\n"
        assert not (tmp_path / "new.txt").exists()
        rewind = service.state(thread).rewinds[-1]
        assert rewind.files is not None
        assert sorted(p.path for p in rewind.files.restored) == ["new.txt", "notes.txt"]
