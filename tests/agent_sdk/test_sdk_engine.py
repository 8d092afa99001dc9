"""The delegated engine through the real TurnService, with a fake SDK
client playing recorded messages: resume and rebase, kun's approvals and
bridged tools, plan mode, steering, interrupts and failures."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest

from kun.config import ConfigError, parse_config
from kun.contracts import events as ev
from kun.contracts.items import AssistantText, ToolCall, ToolResult, UserMessage
from kun.contracts.model import ErrorChunk, ModelRequest
from kun.contracts.threads import ApprovalPolicy, ThreadSettings, Todo
from kun.domain.state import ThreadState, TurnState
from kun.model.delegated import AgentSdkModel, AgentSdkSettings, AgentSdkSource
from kun.model.factory import build_router
from kun.runtime.agent_sdk.messages import TextBlock, ToolResultBlock, ToolUseBlock
from kun.runtime.agent_sdk.messages import UserMessage as SdkUser
from kun.runtime.agent_sdk.permissions import Permission
from kun.runtime.recorder import EventRecorder
from kun.runtime.service import TurnService
from kun.store.jsonl import JsonlEventStore
from kun.tools.host import default_host
from tests.agent_sdk.sdk_fakes import (
    SESSION,
    FakeClient,
    FakeSdk,
    Script,
    init,
    result,
    said,
    text_stream,
)

pytestmark = pytest.mark.anyio


@dataclass
class Engine:
    service: TurnService
    sdk: FakeSdk
    thread_id: str
    workspace: Path
    home: Path

    def state(self) -> ThreadState:
        return self.service.state(self.thread_id)

    async def run(self, text: str, **kwargs: Any) -> TurnState:
        turn_id = await self.service.start_turn(self.thread_id, text, **kwargs)
        with anyio.fail_after(10):
            return await self.service.wait_turn(self.thread_id, turn_id)

    def events(self) -> list[ev.Event]:
        return list(JsonlEventStore(self.home).read(self.thread_id))

    @property
    def client(self) -> FakeClient:
        return self.sdk.clients[-1]


@asynccontextmanager
async def engine(
    tmp_path: Path, script: Script, *, policy: ApprovalPolicy = "on-request"
) -> AsyncIterator[Engine]:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    sdk = FakeSdk(script)
    model = AgentSdkModel(AgentSdkSettings(provider="claude", model="claude-sonnet-4-5", sdk=sdk))
    store = JsonlEventStore(tmp_path / "home")
    async with store, EventRecorder(store) as recorder, anyio.create_task_group() as tg:
        service = TurnService(recorder, tg, model=model, tools=default_host())
        settings = ThreadSettings(workspace=str(workspace), approval_policy=policy)
        thread_id = await service.create_thread(settings)
        try:
            yield Engine(service, sdk, thread_id, workspace, tmp_path / "home")
        finally:
            tg.cancel_scope.cancel()


def playing(*messages: Any) -> Script:
    async def script(client: FakeClient) -> AsyncIterator[Any]:
        for message in messages:
            yield message

    return script


ANSWER = [
    init(),
    *text_stream(0, "Hi ", "there."),
    said(TextBlock("Hi there.")),
    result(),
]


async def until(done: Callable[[], bool]) -> None:
    """Wait (at most 5 s) until ``done()``: the fake SDK runs in the
    service's task group, so the test looks rather than being told."""
    for _ in range(500):
        if done():
            return
        await anyio.sleep(0.01)
    raise AssertionError("waited 5 s in vain")


def of(items: Iterable[Any], cls: type) -> list[Any]:
    return [i for i in items if isinstance(i, cls)]


async def test_a_first_turn_rebases_then_the_next_resumes_its_session(tmp_path: Path) -> None:
    async with engine(tmp_path, playing(*ANSWER)) as e:
        first = await e.run("hello")
        assert first.status == "completed" and first.stop_reason == "end_turn"
        assert first.delegated == "rebased"
        assert [i.text for i in of(first.items, AssistantText)] == ["Hi there."]
        assert e.client.queries == ["hello"]  # no history, no instructions: the bare text
        assert "resume" not in e.client.options
        assert e.client.connected and e.client.disconnected and not e.client.interrupted
        assert first.usage.calls == 1 and first.usage.cost_usd == pytest.approx(0.0123)

        second = await e.run("and again")
        assert second.delegated == "resumed"
        assert e.client.options["resume"] == SESSION
        assert e.client.queries == ["and again"]
        runtime = of(e.events(), ev.DelegatedRuntime)
        assert [(r.mode, r.reason, r.session_id) for r in runtime] == [
            ("rebased", "no session checkpoint in this thread", None),
            ("resumed", "nothing changed since the checkpoint", SESSION),
        ]
        checkpoint = e.state().delegated_checkpoint
        assert not isinstance(checkpoint, msgspec.UnsetType)
        assert (checkpoint.session_id, checkpoint.provider) == (SESSION, "claude")
        assert checkpoint.workspace == str(e.workspace)


async def test_after_a_rewind_the_history_is_replayed_as_a_transcript(tmp_path: Path) -> None:
    async with engine(tmp_path, playing(*ANSWER)) as e:
        first = await e.run("first question")
        second = await e.run("second question")
        await e.service.rewind_thread(e.thread_id, second.turn_id)
        third = await e.run("third question")
        assert third.delegated == "rebased"
        assert "resume" not in e.client.options
        prompt = e.client.queries[0]
        assert prompt.startswith("Earlier conversation in this thread")
        assert "User: first question\nAssistant: Hi there." in prompt
        assert "second question" not in prompt
        assert prompt.endswith("Current request:\nthird question")
        assert first.status == "completed"


async def test_a_failed_checkpoint_commit_never_fails_the_turn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import kun.runtime.agent_sdk.engine as engine_module

    real_draft = engine_module.draft

    def refusing(cls: type, *args: Any, **kwargs: Any) -> Any:
        if cls is ev.DelegatedCheckpoint:
            raise OSError("disk full")
        return real_draft(cls, *args, **kwargs)

    monkeypatch.setattr(engine_module, "draft", refusing)
    async with engine(tmp_path, playing(*ANSWER)) as e:
        assert (await e.run("hello")).status == "completed"
        assert (await e.run("again")).delegated == "rebased"


async def test_sdk_tools_are_recorded_and_asked_through_kuns_approvals(tmp_path: Path) -> None:
    answers: list[Any] = []

    async def script(client: FakeClient) -> AsyncIterator[Any]:
        yield init()
        yield said(ToolUseBlock("toolu_1", "Bash", {"command": "make"}))
        answers.append(await client.permit("Bash", {"command": "make"}, "toolu_1"))
        yield SdkUser([ToolResultBlock("toolu_1", "built")])
        answers.append(await client.permit("Read", {"file_path": "a.py"}, "toolu_2"))
        answers.append(await client.permit("Write", {"file_path": "/etc/x", "content": ""}, "t3"))
        answers.append(await client.permit("AskUserQuestion", {"questions": []}, "toolu_4"))
        yield said(TextBlock("Built."))
        yield result()

    async with engine(tmp_path, script) as e:
        turn_id = await e.service.start_turn(e.thread_id, "build it")
        asked = []
        with anyio.fail_after(10):
            async for event in e.service.recorder.subscribe(e.thread_id):
                if isinstance(event, ev.ApprovalRequested):
                    asked.append((event.call_id, event.tool_name, event.summary))
                    decision = "approved" if len(asked) == 1 else "denied"
                    await e.service.answer_approval(event.approval_id, decision)
                    if len(asked) == 2:
                        break
            turn = await e.service.wait_turn(e.thread_id, turn_id)
    assert asked[0][:2] == ("toolu_1", "Bash") and "make" in asked[0][2]
    assert asked[1][:2] == ("t3", "Write")  # a write outside the workspace asks like a command
    assert answers[0] == Permission(True, updated_input={"command": "make"})
    assert answers[1] == Permission(True, updated_input={"file_path": "a.py"})
    assert not answers[2].allow and "denied" in answers[2].message
    assert not answers[3].allow
    assert turn.status == "completed"
    calls = of(turn.items, ToolCall)
    assert [(c.name, c.status) for c in calls] == [("Bash", "completed")]
    assert [a.status for a in turn.items if type(a).__name__ == "Approval"] == [
        "approved",
        "denied",
    ]


async def test_the_never_policy_denies_without_asking(tmp_path: Path) -> None:
    answers: list[Any] = []

    async def script(client: FakeClient) -> AsyncIterator[Any]:
        answers.append(await client.permit("Bash", {"command": "rm -rf /"}, "toolu_1"))
        yield result()

    async with engine(tmp_path, script, policy="never") as e:
        turn = await e.run("clean up")
    assert not answers[0].allow and "does not allow" in answers[0].message
    assert not [i for i in turn.items if type(i).__name__ == "Approval"]


async def test_a_decider_that_raises_denies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import kun.runtime.agent_sdk.permissions as permissions

    def broken(*args: Any) -> Any:
        raise RuntimeError("policy table missing")

    monkeypatch.setattr(permissions, "decide", broken)
    answers: list[Any] = []

    async def script(client: FakeClient) -> AsyncIterator[Any]:
        answers.append(await client.permit("Read", {"file_path": "a.py"}, "toolu_1"))
        yield result()

    async with engine(tmp_path, script) as e:
        assert (await e.run("read")).status == "completed"
    assert answers == [
        Permission(False, message="kun could not decide whether Read may run; denied.")
    ]


async def test_kun_tools_are_bridged_and_run_through_kun(tmp_path: Path) -> None:
    outputs: list[dict[str, Any]] = []
    todos = {"todos": [{"content": "write tests", "status": "in_progress"}]}

    async def script(client: FakeClient) -> AsyncIterator[Any]:
        yield said(ToolUseBlock("toolu_7", "mcp__kun__todo_write", todos))
        allowed = await client.permit("mcp__kun__todo_write", todos, "toolu_7")
        assert allowed.allow
        outputs.append(await client.call_tool("todo_write", todos))
        outputs.append(await client.call_tool("todo_write", {"todos": "not a list"}))
        yield SdkUser([ToolResultBlock("toolu_7", outputs[0]["content"][0]["text"])])
        yield result()

    async with engine(tmp_path, script) as e:
        turn = await e.run("plan the work")
        bridged = {tool.name for tool in e.client.options["mcp_servers"]["kun"]}
        state = e.state()
    assert state.settings.todos == (Todo(content="write tests", status="in_progress"),)
    assert outputs[0]["is_error"] is False
    assert outputs[1]["is_error"] is True  # kun's own argument check, as an error result
    assert {"todo_write", "todo_list"} <= bridged
    assert not bridged & {
        "read_file",
        "write_file",
        "edit_file",
        "list_dir",
        "glob",
        "grep",
        "bash",
    }
    assert "create_plan" not in bridged  # outside plan mode
    result_item = of(turn.items, ToolResult)[0]
    assert (result_item.name, result_item.is_error) == ("todo_write", False)


async def test_a_bridged_handler_that_crashes_is_an_error_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import kun.runtime.agent_sdk.bridge as bridge

    def crash(*args: Any, **kwargs: Any) -> Any:
        raise ValueError("no context")

    monkeypatch.setattr(bridge, "tool_context", crash)
    outputs: list[dict[str, Any]] = []

    async def script(client: FakeClient) -> AsyncIterator[Any]:
        outputs.append(await client.call_tool("todo_list", {}))
        yield result()

    async with engine(tmp_path, script) as e:
        assert (await e.run("x")).status == "completed"
    assert outputs[0]["is_error"] is True
    assert "ValueError: no context" in outputs[0]["content"][0]["text"]


async def test_plan_mode_is_kuns_own(tmp_path: Path) -> None:
    answers: list[Any] = []

    async def script(client: FakeClient) -> AsyncIterator[Any]:
        answers.append(await client.permit("Bash", {"command": "ls"}, "toolu_1"))
        answers.append(await client.permit("mcp__kun__create_plan", {"markdown": "x"}, "t2"))
        yield result()

    async with engine(tmp_path, script) as e:
        turn = await e.run("plan it", plan_mode=True)
        options = e.client.options
        prompt = e.client.queries[0]
    assert options["tools"] == [] and options["permission_mode"] == "default"
    bridged = {tool.name for tool in options["mcp_servers"]["kun"]}
    assert "create_plan" in bridged and "todo_write" not in bridged
    assert not answers[0].allow and "Plan mode" in answers[0].message
    assert answers[1].allow
    assert prompt.startswith("[kun] Plan mode") and prompt.endswith("Current request:\nplan it")
    assert turn.plan_mode


async def test_steering_goes_to_the_running_session(tmp_path: Path) -> None:
    async def script(client: FakeClient) -> AsyncIterator[Any]:
        yield init()
        yield said(TextBlock("Starting."))
        await until(lambda: len(client.queries) >= 2)
        yield said(TextBlock("Also doing that."))
        message = result()
        object.__setattr__(message, "user_message_uuids", list(client.sdk.uuids))
        yield message

    async with engine(tmp_path, script) as e:
        turn_id = await e.service.start_turn(e.thread_id, "start")
        await until(lambda: bool(e.sdk.clients and e.client.queries))
        await e.service.steer_turn(e.thread_id, turn_id, "also add docs")
        with anyio.fail_after(10):
            turn = await e.service.wait_turn(e.thread_id, turn_id)
        queries = e.client.queries
    assert queries == ["start", "also add docs"]
    steered = [i for i in of(turn.items, UserMessage) if i.steered]
    assert [s.text for s in steered] == ["also add docs"]
    assert turn.status == "completed"


async def test_an_interrupt_reaches_the_sdk(tmp_path: Path) -> None:
    async def script(client: FakeClient) -> AsyncIterator[Any]:
        yield init()
        for message in text_stream(0, "Working"):
            yield message
        yield said(ToolUseBlock("toolu_1", "Bash", {"command": "sleep 100"}))
        await anyio.sleep_forever()

    async with engine(tmp_path, script, policy="full-auto") as e:
        turn_id = await e.service.start_turn(e.thread_id, "long job")
        await until(lambda: bool(e.state().turns[-1].tools_in_flight))
        await e.service.interrupt_turn(e.thread_id, turn_id)
        with anyio.fail_after(10):
            turn = await e.service.wait_turn(e.thread_id, turn_id)
        client = e.client
    assert turn.status == "aborted"
    assert client.interrupted and client.disconnected
    assert [c.status for c in of(turn.items, ToolCall)] == ["aborted"]
    assert e.state().delegated_checkpoint is msgspec.UNSET


@pytest.mark.parametrize(
    ("messages", "code"),
    [
        ((result("error_max_turns", is_error=True, errors=["10 turns"]),), "agent_sdk_max_turns"),
        ((said(TextBlock("half")),), "agent_sdk_no_result"),
        (
            (result("error_during_execution", is_error=True, terminal_reason="aborted_tools"),),
            "agent_sdk_interrupted",
        ),
    ],
)
async def test_failures_fail_the_turn_with_a_code(
    tmp_path: Path, messages: tuple[Any, ...], code: str
) -> None:
    async with engine(tmp_path, playing(*messages)) as e:
        turn = await e.run("go")
    assert turn.status == "failed" and turn.error is not None and turn.error.code == code
    assert e.state().delegated_checkpoint is msgspec.UNSET


async def test_an_sdk_error_is_classified_by_type(tmp_path: Path) -> None:
    async def script(client: FakeClient) -> AsyncIterator[Any]:
        yield init()
        raise ConnectionError("pipe closed")

    async with engine(tmp_path, script) as e:
        turn = await e.run("go")
    assert turn.error is not None and turn.error.code == "agent_sdk_fake_failure"
    assert "pipe closed" in turn.error.message


async def test_without_the_extra_the_turn_fails_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "claude_agent_sdk", None)
    async with engine(tmp_path, playing()) as e:
        e.sdk.clients.clear()
        model = AgentSdkModel(AgentSdkSettings(provider="claude", model="claude-sonnet-4-5"))
        turn_id = await e.service.start_turn(e.thread_id, "go", model=model)
        with anyio.fail_after(10):
            turn = await e.service.wait_turn(e.thread_id, turn_id)
    assert turn.error is not None and turn.error.code == "agent_sdk_missing"
    assert "kun[claude]" in turn.error.message


# -- configuration and routing -------------------------------------------------

TOML = b"""
default_provider = "claude"

[providers.claude]
kind = "agent-sdk"
cli_path = "/opt/claude/bin/claude"
api_key_env = "MY_CLAUDE_TOKEN"
"""


def test_an_agent_sdk_provider_is_configured_like_any_other() -> None:
    config = parse_config(TOML, "kun.toml")
    provider = config.providers["claude"]
    assert (provider.kind, provider.cli_path) == ("agent-sdk", "/opt/claude/bin/claude")
    assert provider.default_model == "claude-sonnet-4-5"
    assert provider.api_key_env == "MY_CLAUDE_TOKEN"


@pytest.mark.parametrize(
    ("table", "key"),
    [
        ('kind = "agent-sdk"\ndefault_model = "deepseek-chat"', "providers.p.default_model"),
        ('kind = "agent-sdk"\nbase_url = "https://api.x.com"', "providers.p.base_url"),
        (
            'base_url = "https://api.x.com"\ndefault_model = "m"\ncli_path = "/x"',
            "providers.p.cli_path",
        ),
    ],
)
def test_mistakes_in_an_agent_sdk_table_are_named(table: str, key: str) -> None:
    with pytest.raises(ConfigError) as raised:
        parse_config(f"[providers.p]\n{table}\n".encode(), "kun.toml")
    assert raised.value.key == key


def test_the_router_gives_a_delegated_client_with_a_claude_model() -> None:
    router = build_router(parse_config(TOML, "kun.toml"))
    client = router.select("claude/deepseek-v4-flash")
    assert isinstance(client, AgentSdkModel)
    assert client.model == "claude-sonnet-4-5"  # not a Claude id: the default
    assert router.select("claude/claude-opus-4-1").model == "claude-opus-4-1"
    assert client.delegated.cli_path == "/opt/claude/bin/claude"


async def test_without_the_extra_choosing_it_is_one_error_naming_it() -> None:
    config = parse_config(TOML, "kun.toml")
    source = AgentSdkSource(config.providers["claude"], source="kun.toml", installed=lambda: False)
    with pytest.raises(ConfigError, match=r"kun\[claude\]"):
        source.client()
    model = AgentSdkModel(AgentSdkSettings(provider="claude", model="claude-sonnet-4-5"))
    chunks = [c async for c in model.stream(ModelRequest())]
    assert len(chunks) == 1 and isinstance(chunks[0], ErrorChunk)
    assert chunks[0].code == "delegated_provider"


def test_importing_kun_does_not_import_the_sdk() -> None:
    import subprocess

    code = (
        "import sys, kun.entry, kun.runtime.loop, kun.runtime.agent_sdk.engine, kun.model.factory;"
        "print('claude_agent_sdk' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).parents[2],
    )
    assert out.stdout.strip() == "False"


async def test_a_big_tool_result_goes_to_a_side_file(tmp_path: Path) -> None:
    big = "line of a large file\n" * 10_000
    messages = (
        said(ToolUseBlock("toolu_r", "Read", {"file_path": "big.txt"})),
        SdkUser([ToolResultBlock("toolu_r", big)]),
        result(),
    )
    async with engine(tmp_path, playing(*messages)) as e:
        turn = await e.run("read it")
        line_sizes = [
            len(line)
            for line in (e.home / "threads" / e.thread_id / "events.jsonl")
            .read_bytes()
            .splitlines()
        ]
    result_item = of(turn.items, ToolResult)[0]
    assert result_item.output_ref is not None and result_item.output_ref.size == len(big)
    assert len(result_item.output) < 4096
    assert max(line_sizes) < 16_384


async def test_a_session_that_cannot_be_resumed_is_rebased(tmp_path: Path) -> None:
    async def script(client: FakeClient) -> AsyncIterator[Any]:
        if "resume" in client.options:
            yield result(
                "error_during_execution",
                is_error=True,
                errors=["No conversation found with session ID"],
                usage={"input_tokens": 3},
                cost=0.0,
            )
            return
        for message in ANSWER:
            yield message

    async with engine(tmp_path, script) as e:
        await e.run("first")
        second = await e.run("second")
        attempts = [(c.options.get("resume"), c.queries[0]) for c in e.sdk.clients[1:]]
        runtime = of(e.events(), ev.DelegatedRuntime)
    assert second.status == "completed" and second.delegated == "rebased"
    assert attempts[0] == (SESSION, "second")
    assert attempts[1][0] is None and "User: first" in attempts[1][1]
    assert [r.mode for r in runtime] == ["rebased", "resumed", "rebased"]
    assert runtime[2].reason.startswith("the session could not be resumed: ")
    assert "No conversation found" in runtime[2].reason
    assert second.usage.calls == 2  # the failed attempt's usage still counts


def test_kun_config_shows_an_agent_sdk_provider(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from kun.cli.config_command import config_command

    (tmp_path / "kun.toml").write_bytes(TOML)
    out = CliRunner().invoke(
        config_command,
        ["--config", str(tmp_path / "kun.toml"), "--home", str(tmp_path / "home")],
        env={"MY_CLAUDE_TOKEN": "x"},
    )
    assert out.exit_code == 0, out.output
    section = out.output.split("[providers.claude]")[1]
    assert 'kind = "agent-sdk"' in section and 'cli_path = "/opt/claude/bin/claude"' in section
    assert "$MY_CLAUDE_TOKEN is set, value not shown" in section
    assert "base_url" not in section
