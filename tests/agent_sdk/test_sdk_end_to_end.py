"""End to end: a thread on an ``agent-sdk`` provider configured in
``kun.toml``, run by kun's TurnService through the real ``claude_agent_sdk``
against the fake ``claude`` executable (:mod:`tests.agent_sdk.fake_claude`).

What it proves that the fakes of :mod:`tests.agent_sdk.test_sdk_engine`
cannot: the options kun builds are ones the SDK and the CLI accept
(``cli_path``, no setting sources, the MCP server ``kun``, permissions over
stdio), kun's bridged tool really runs when the CLI calls it over MCP, an
SDK permission request becomes a kun approval answered through the service,
and the second turn resumes the first one's session with ``--resume``.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest

from kun.config import parse_config
from kun.contracts import events as ev
from kun.contracts.items import AssistantText, ToolCall, ToolResult
from kun.contracts.threads import ThreadSettings, Todo
from kun.model.factory import build_router
from kun.runtime.agent_sdk.env import AUTH_OVERRIDE_VARIABLES
from kun.runtime.recorder import EventRecorder
from kun.runtime.service import TurnService
from kun.store.jsonl import JsonlEventStore
from kun.tools.host import default_host
from tests.agent_sdk.fake_support import fake_cli_path, read_log, write_scenario

if os.environ.get("CI") != "true":
    pytest.importorskip("claude_agent_sdk")

pytestmark = pytest.mark.anyio

USAGE = {
    "input_tokens": 20,
    "output_tokens": 9,
    "cache_read_input_tokens": 4_000,
    "cache_creation_input_tokens": 100,
}
TODOS = {"todos": [{"content": "ship --json", "status": "in_progress"}]}


@asynccontextmanager
async def kun_on_fake_claude(tmp_path: Path) -> AsyncIterator[tuple[TurnService, str, Path]]:
    toml = f"""
default_provider = "claude"

[providers.claude]
kind = "agent-sdk"
cli_path = "{fake_cli_path()}"
"""
    router = build_router(parse_config(toml.encode(), "kun.toml"))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    store = JsonlEventStore(tmp_path / "home")
    async with store, EventRecorder(store) as recorder, anyio.create_task_group() as tg:
        service = TurnService(recorder, tg, model=router.select(), tools=default_host())
        thread_id = await service.create_thread(
            ThreadSettings(
                workspace=str(workspace), provider="claude", approval_policy="on-request"
            )
        )
        try:
            yield service, thread_id, tmp_path / "home"
        finally:
            tg.cancel_scope.cancel()


async def test_a_thread_runs_on_the_sdk_against_the_fake_claude(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = write_scenario(
        tmp_path,
        [
            {
                "steps": [
                    {"type": "thinking", "thinking": "Track it first.", "signature": "sig"},
                    {
                        "type": "text",
                        "text": "Tracking the work.",
                        "deltas": ["Tracking ", "the work."],
                    },
                    {
                        "type": "tool_use",
                        "name": "mcp__kun__todo_write",
                        "input": TODOS,
                        "id": "toolu_td",
                    },
                    {
                        "type": "tool_use",
                        "name": "Bash",
                        "input": {"command": "make test"},
                        "id": "toolu_sh",
                        "result": "14 passed",
                    },
                    {"type": "text", "text": "Tests pass."},
                ],
                "usage": USAGE,
                "total_cost_usd": 0.0123,
            },
        ],
    )
    # Each claude process plays its scenario from the first turn: the
    # resumed turn's process gets its own.
    resumed = write_scenario(
        tmp_path,
        [{"steps": [{"type": "text", "text": "Still here."}], "total_cost_usd": 0.001}],
        name="resumed",
    )
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-must-not-be-used")

    async with kun_on_fake_claude(tmp_path) as (service, thread_id, home):
        turn_id = await service.start_turn(thread_id, "run the tests")
        asked = []
        with anyio.fail_after(30):
            async for event in service.recorder.subscribe(thread_id):
                if isinstance(event, ev.ApprovalRequested):
                    asked.append((event.call_id, event.tool_name, event.summary))
                    await service.answer_approval(event.approval_id, "approved")
                    break
            first = await service.wait_turn(thread_id, turn_id)
        todos = service.state(thread_id).settings.todos
        for name, value in resumed.items():
            monkeypatch.setenv(name, value)
        with anyio.fail_after(30):
            second_id = await service.start_turn(thread_id, "are you there?")
            second = await service.wait_turn(thread_id, second_id)
        events = list(JsonlEventStore(home).read(thread_id))

    assert first.status == "completed", first.error
    assert [a[:2] for a in asked] == [("toolu_sh", "Bash")]  # on-request asks for a command
    assert "make test" in asked[0][2]
    texts = [i.text for i in first.items if isinstance(i, AssistantText)]
    assert texts == ["Tracking the work.", "Tests pass."]
    calls = [(c.name, c.call_id, c.status) for c in first.items if isinstance(c, ToolCall)]
    assert calls == [("todo_write", "toolu_td", "completed"), ("Bash", "toolu_sh", "completed")]
    results = {r.call_id: r for r in first.items if isinstance(r, ToolResult)}
    assert results["toolu_sh"].output == "14 passed"
    assert not results["toolu_td"].is_error
    assert todos == (Todo(content="ship --json", status="in_progress"),)  # kun's tool ran
    assert first.usage.prompt_tokens == 4_120 and first.usage.cost_usd == pytest.approx(0.0123)

    assert second.status == "completed" and second.delegated == "resumed"
    runtime = [e for e in events if isinstance(e, ev.DelegatedRuntime)]
    assert [r.mode for r in runtime] == ["rebased", "resumed"]

    (first_run,) = read_log(env)
    (second_run,) = read_log(resumed)
    assert first_run["prompts"][0] == "run the tests"  # the bare text: nothing before it
    # Resumed: the session has the history; the turn's instructions (the
    # todos the first turn set) and the request are all that is sent.
    assert second_run["prompts"][0] == (
        "<thread_todos>\n- [in_progress] ship --json\n</thread_todos>\n\n"
        "Current request:\nare you there?"
    )
    assert second_run["session_id"] == first_run["session_id"] == runtime[1].session_id
    assert any(arg.startswith("--resume") for arg in second_run["argv"])
    assert not any(arg.startswith("--resume") for arg in first_run["argv"])
    assert "--setting-sources=" in first_run["argv"]
    assert any("AskUserQuestion" in arg for arg in first_run["argv"])
    assert str(fake_cli_path()) not in first_run["env"]  # names only, as the fake logs
    # The seven are emptied for the child: present only as blank overrides.
    assert set(AUTH_OVERRIDE_VARIABLES) <= set(first_run["env"])
