"""Plan mode in the loop (SPEC §7.5): the narrowed tools, the refused change
tool, create_plan and its todos, and the soft-required resolver (a question
stops, prose is materialised, nothing fails)."""

from __future__ import annotations

from pathlib import Path

import anyio
import msgspec
import pytest

from kun.contracts.items import Approval, Plan, ToolCall, ToolResult
from kun.contracts.model import CompletedChunk, ModelRequest
from kun.contracts.threads import ApprovalPolicy, Goal, Todo
from kun.domain.plan_mode import MATERIALIZED_SUMMARY, PLAN_MODE_INSTRUCTION, plan_context
from kun.model.scripted import text_reply, tool_reply
from tests.cli_support import invoked
from tests.runtime.support import Harness, harness

pytestmark = pytest.mark.anyio

PLAN = "## Plan\n- [ ] add the flag\n- [x] read a.py\n"
CREATE = tool_reply("create_plan", {"summary": "Add a flag", "markdown": PLAN})
CHANGE_TOOLS = {"bash", "edit_file", "write_file", "todo_write", "todo_list"}


def names(request: ModelRequest) -> set[str]:
    return {t.name for t in request.tools}


async def plan_turn(h: Harness, text: str = "plan a flag") -> str:
    return await h.service.start_turn(h.thread_id, text, plan_mode=True)


async def test_a_plan_turn_reads_then_records_its_plan_and_todos(tmp_path: Path) -> None:
    script = [tool_reply("read_file", {"path": "a.py"}), CREATE, text_reply("Plan ready.")]
    async with harness(tmp_path, script) as h:
        turn = await h.service.wait_turn(h.thread_id, await plan_turn(h))
        assert turn.status == "completed" and turn.plan_mode
        first, second, third = h.model.requests
        assert names(first) == {
            "create_plan",
            "glob",
            "grep",
            "list_dir",
            "read_file",
            "request_user_input",
        }
        assert names(second) == names(first)
        assert "create_plan" not in names(third) and "read_file" in names(third)
        assert (first.context_instructions or "").endswith(PLAN_MODE_INSTRUCTION)
        assert PLAN_MODE_INSTRUCTION not in (third.context_instructions or "")
        plans = [i for i in turn.items if isinstance(i, Plan)]
        assert [(p.markdown, p.summary, p.workspace) for p in plans] == [
            (PLAN, "Add a flag", str(h.workspace))
        ]
        assert h.state().settings.todos == (
            Todo(content="add the flag", status="pending"),
            Todo(content="read a.py", status="completed"),
        )
    events = (h.home / "threads" / h.thread_id / "events.jsonl").read_text()
    assert '"plan_mode":true' in events
    replay = await invoked(["replay", h.thread_id, "--home", str(h.home)])
    assert replay.exit_code == 0, replay.output
    assert "plan mode" in replay.output and "  plan: Add a flag" in replay.output
    assert "    - [ ] add the flag" in replay.output


async def test_a_change_tool_is_refused_in_plan_mode(tmp_path: Path) -> None:
    write = tool_reply("write_file", {"path": "a.py", "content": "gone\n"})
    async with harness(tmp_path, [write, CREATE, text_reply("ok")]) as h:
        turn = await h.service.wait_turn(h.thread_id, await plan_turn(h))
        results = [i for i in turn.items if isinstance(i, ToolResult)]
        assert results[0].is_error and results[0].code == "not_allowed_in_plan_mode"
        assert "create_plan" in results[0].output
        assert (h.workspace / "a.py").read_text() == "print('a')\n"


async def test_plan_prose_is_materialised_into_the_plan(tmp_path: Path) -> None:
    prose = "1. Add the flag\n2. Write tests\n\nDoes this look right?"
    async with harness(tmp_path, [text_reply(prose)]) as h:
        turn = await h.service.wait_turn(h.thread_id, await plan_turn(h))
        assert turn.status == "completed"
        assert len(h.model.requests) == 1
        calls = [i for i in turn.items if isinstance(i, ToolCall)]
        assert [c.name for c in calls] == ["create_plan"] and calls[0].status == "completed"
        assert msgspec.json.decode(calls[0].arguments) == {
            "summary": "Add the flag",
            "markdown": prose,
        }
        plans = [i for i in turn.items if isinstance(i, Plan)]
        assert [(p.markdown, p.summary, p.from_reply) for p in plans] == [
            (prose, "Add the flag", True)
        ]
        results = [i for i in turn.items if isinstance(i, ToolResult)]
        assert [r.call_id for r in results] == [calls[0].call_id] and not results[0].is_error
    events = (h.home / "threads" / h.thread_id / "events.jsonl").read_text()
    assert '"kind":"tool_call_started"' in events


@pytest.mark.parametrize("policy", ["untrusted", "always", "on-request"])
async def test_kuns_own_plan_call_never_asks_for_approval(
    tmp_path: Path, policy: ApprovalPolicy
) -> None:
    prose = "# Add the flag\n\n- [ ] parse it\n"
    async with harness(tmp_path, [text_reply(prose)], policy=policy) as h:
        with anyio.fail_after(10):
            turn = await h.service.wait_turn(h.thread_id, await plan_turn(h))
        assert turn.status == "completed"
        assert not [i for i in turn.items if isinstance(i, Approval)]
        (plan,) = [i for i in turn.items if isinstance(i, Plan)]
        assert (plan.summary, plan.from_reply) == ("Add the flag", True)
        assert MATERIALIZED_SUMMARY not in plan.summary


async def test_the_models_own_create_plan_is_not_from_the_reply(tmp_path: Path) -> None:
    async with harness(tmp_path, [CREATE, text_reply("Plan ready.")]) as h:
        turn = await h.service.wait_turn(h.thread_id, await plan_turn(h))
        (plan,) = [i for i in turn.items if isinstance(i, Plan)]
        assert (plan.summary, plan.from_reply) == ("Add a flag", False)


async def test_a_clarifying_question_stops_for_the_answer(tmp_path: Path) -> None:
    question = "Should the flag live in the config file or in an environment variable?"
    async with harness(tmp_path, [text_reply(question)]) as h:
        turn = await h.service.wait_turn(h.thread_id, await plan_turn(h))
        assert turn.status == "completed"
        assert not [i for i in turn.items if isinstance(i, Plan | ToolCall)]


async def test_no_text_and_no_plan_fails_required_tool_missing(tmp_path: Path) -> None:
    async with harness(tmp_path, [[CompletedChunk(stop_reason="stop")]]) as h:
        turn = await h.service.wait_turn(h.thread_id, await plan_turn(h))
        assert turn.status == "failed"
        assert turn.error is not None and turn.error.code == "required_tool_missing"


async def test_an_ordinary_turn_has_no_create_plan(tmp_path: Path) -> None:
    async with harness(tmp_path, [CREATE, text_reply("done")]) as h:
        turn = await h.run("add a flag")
        assert not turn.plan_mode
        assert "create_plan" not in names(h.model.requests[0])
        assert CHANGE_TOOLS <= names(h.model.requests[0])
        results = [i for i in turn.items if isinstance(i, ToolResult)]
        assert results[0].is_error and results[0].code == "not_in_plan_mode"
        assert not [i for i in turn.items if isinstance(i, Plan)]
        assert h.state().settings.todos == ()


async def test_a_fork_keeps_the_plan_unless_it_moves_to_another_workspace(tmp_path: Path) -> None:
    async with harness(tmp_path, [CREATE, text_reply("Plan ready.")]) as h:
        await h.service.wait_turn(h.thread_id, await plan_turn(h))
        assert plan_context(h.state()) is not None
        fork = await h.service.fork_thread(h.thread_id)
        forked = plan_context(h.service.state(fork))
        assert forked is not None and forked.plan.markdown == PLAN
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        await h.service.update_thread(fork, workspace=str(elsewhere))
        assert plan_context(h.service.state(fork)) is None


async def test_an_active_goal_keeps_its_tools_in_plan_mode(tmp_path: Path) -> None:
    script = [tool_reply("get_goal"), CREATE, text_reply("Plan ready.")]
    async with harness(tmp_path, script) as h:
        await h.service.update_thread(h.thread_id, goal=Goal(objective="ship the flag"))
        turn = await h.service.wait_turn(h.thread_id, await plan_turn(h))
        assert {"get_goal", "todo_write"} <= names(h.model.requests[0])
        assert not names(h.model.requests[0]) & {"bash", "write_file", "edit_file"}
        results = [i for i in turn.items if isinstance(i, ToolResult)]
        assert [r.name for r in results] == ["get_goal", "create_plan"]
        assert not any(r.is_error for r in results)
