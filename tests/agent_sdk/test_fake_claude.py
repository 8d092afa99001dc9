"""The real ``claude_agent_sdk`` against the fake ``claude``: the fake must speak
the protocol well enough that the SDK's own parsing, control handling and MCP
bridge work end to end, or tests built on it would prove nothing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any, TypeVar, cast

import anyio
import pytest

from tests.agent_sdk.fake_support import (
    LOG_ENV,
    Turn,
    fake_cli_path,
    read_log,
    write_scenario,
)

if os.environ.get("CI") != "true":
    pytest.importorskip("claude_agent_sdk")

from claude_agent_sdk import (
    AssistantMessage,
    ClaudeAgentOptions,
    ClaudeSDKClient,
    HookContext,
    HookInput,
    HookJSONOutput,
    HookMatcher,
    McpSdkServerConfig,
    Message,
    PermissionResultAllow,
    PermissionResultDeny,
    ResultError,
    ResultMessage,
    StreamEvent,
    SystemMessage,
    TextBlock,
    ThinkingBlock,
    ToolPermissionContext,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
    create_sdk_mcp_server,
    query,
    tool,
)

pytestmark = pytest.mark.anyio

T = TypeVar("T")
TIMEOUT = 5.0
USAGE = {
    "input_tokens": 120,
    "output_tokens": 30,
    "cache_read_input_tokens": 80,
    "cache_creation_input_tokens": 12,
}


def options(env: dict[str, str], **kwargs: Any) -> ClaudeAgentOptions:
    """Options that spawn the fake; never the bundled or an installed ``claude``."""
    return ClaudeAgentOptions(cli_path=fake_cli_path(), env=env, **kwargs)


async def one_prompt(text: str) -> AsyncIterator[dict[str, Any]]:
    """A streamed prompt: how callers with bidirectional needs keep stdin open."""
    yield {"type": "user", "message": {"role": "user", "content": text}}


async def run_query(
    tmp_path: Path, turns: Sequence[Turn], prompt: str = "hi", **kwargs: Any
) -> tuple[list[Message], dict[str, str]]:
    env = write_scenario(tmp_path, turns)
    with anyio.fail_after(TIMEOUT):
        messages = [m async for m in query(prompt=prompt, options=options(env, **kwargs))]
    return messages, env


def calc_server(calls: list[dict[str, Any]]) -> McpSdkServerConfig:
    """An in-process MCP server whose ``add`` tool records each call it really runs."""

    @tool("add", "Add two integers", {"a": int, "b": int})
    async def add(args: dict[str, Any]) -> dict[str, Any]:
        calls.append(args)
        return {"content": [{"type": "text", "text": str(args["a"] + args["b"])}]}

    return create_sdk_mcp_server("calc", tools=[add])


ADD_TURN: list[dict[str, Any]] = [
    {"type": "tool_use", "id": "toolu_add", "name": "mcp__calc__add", "input": {"a": 2, "b": 3}},
    {"type": "text", "text": "The sum is 5."},
]


def of_type(messages: Sequence[Message], kind: type[T]) -> list[T]:
    return [m for m in messages if isinstance(m, kind)]


def blocks(messages: Sequence[Message], kind: type[T]) -> list[T]:
    found: list[T] = []
    for message in messages:
        if isinstance(message, AssistantMessage | UserMessage) and isinstance(
            message.content, list
        ):
            found.extend(b for b in message.content if isinstance(b, kind))
    return found


def text_deltas(messages: Sequence[Message]) -> list[str]:
    return [
        m.event["delta"]["text"]
        for m in of_type(messages, StreamEvent)
        if m.event.get("type") == "content_block_delta"
        and m.event["delta"].get("type") == "text_delta"
    ]


async def test_text_answer_streams_partial_messages_then_the_result(tmp_path: Path) -> None:
    turn = {
        "steps": [
            {"type": "text", "text": "Hello there, world", "deltas": ["Hel", "lo there", ", world"]}
        ],
        "usage": USAGE,
        "total_cost_usd": 0.0123,
    }
    messages, _ = await run_query(tmp_path, [turn], include_partial_messages=True)

    init = of_type(messages, SystemMessage)[0]
    assert init.subtype == "init"
    assert init.data["claude_code_version"]
    assert text_deltas(messages) == ["Hel", "lo there", ", world"]
    assert [b.text for b in blocks(messages, TextBlock)] == ["Hello there, world"]
    result = messages[-1]
    assert isinstance(result, ResultMessage)
    assert (result.subtype, result.is_error, result.num_turns) == ("success", False, 1)
    assert result.result == "Hello there, world"
    assert result.usage == USAGE
    assert result.total_cost_usd == pytest.approx(0.0123)
    assert result.session_id == init.data["session_id"]
    assert result.duration_ms >= 0


async def test_without_partial_messages_no_stream_events_are_sent(tmp_path: Path) -> None:
    messages, _ = await run_query(tmp_path, [[{"type": "text", "text": "plain"}]])

    assert of_type(messages, StreamEvent) == []
    assert [b.text for b in blocks(messages, TextBlock)] == ["plain"]


async def test_thinking_comes_as_a_block_and_as_deltas(tmp_path: Path) -> None:
    turn = [
        {"type": "thinking", "thinking": "The user greets me.", "signature": "sig-1"},
        {"type": "text", "text": "Hi!"},
    ]
    messages, _ = await run_query(tmp_path, [turn], include_partial_messages=True)

    [thinking] = blocks(messages, ThinkingBlock)
    assert (thinking.thinking, thinking.signature) == ("The user greets me.", "sig-1")
    kinds = [
        m.event["delta"]["type"]
        for m in of_type(messages, StreamEvent)
        if m.event.get("type") == "content_block_delta"
    ]
    assert kinds[:2] == ["thinking_delta", "signature_delta"]
    assistants = of_type(messages, AssistantMessage)
    assert len({a.message_id for a in assistants}) == 1


async def test_a_tool_of_an_in_process_mcp_server_really_runs(tmp_path: Path) -> None:
    calls: list[dict[str, Any]] = []
    env = write_scenario(tmp_path, [{"steps": ADD_TURN, "usage": USAGE}])
    opts = options(env, mcp_servers={"calc": calc_server(calls)}, allowed_tools=["mcp__calc__add"])
    with anyio.fail_after(TIMEOUT):
        async with ClaudeSDKClient(options=opts) as client:
            await client.query("add 2 and 3")
            messages = [m async for m in client.receive_response()]

    assert calls == [{"a": 2, "b": 3}]
    [use] = blocks(messages, ToolUseBlock)
    assert (use.id, use.name, use.input) == ("toolu_add", "mcp__calc__add", {"a": 2, "b": 3})
    [result_block] = blocks(messages, ToolResultBlock)
    assert result_block.tool_use_id == "toolu_add"
    assert result_block.content == [{"type": "text", "text": "5"}]
    assert not result_block.is_error
    assert "mcp__calc__add" in of_type(messages, SystemMessage)[0].data["tools"]
    result = messages[-1]
    assert isinstance(result, ResultMessage)
    assert (result.num_turns, result.result) == (2, "The sum is 5.")
    [record] = read_log(env)
    methods = [exchange["sent"]["method"] for exchange in record["mcp"]]
    assert methods == ["initialize", "notifications/initialized", "tools/list", "tools/call"]


async def test_can_use_tool_allows_with_an_updated_input(tmp_path: Path) -> None:
    calls: list[dict[str, Any]] = []
    asked: list[tuple[str, dict[str, Any], str | None]] = []

    async def allow(
        name: str, tool_input: dict[str, Any], context: ToolPermissionContext
    ) -> PermissionResultAllow:
        asked.append((name, tool_input, context.tool_use_id))
        return PermissionResultAllow(updated_input={**tool_input, "b": 40})

    env = write_scenario(tmp_path, [ADD_TURN])
    opts = options(env, mcp_servers={"calc": calc_server(calls)}, can_use_tool=allow)
    with anyio.fail_after(TIMEOUT):
        messages = [m async for m in query(prompt=one_prompt("add"), options=opts)]

    assert asked == [("mcp__calc__add", {"a": 2, "b": 3}, "toolu_add")]
    assert calls == [{"a": 2, "b": 40}]
    [result_block] = blocks(messages, ToolResultBlock)
    assert result_block.content == [{"type": "text", "text": "42"}]
    result = messages[-1]
    assert isinstance(result, ResultMessage)
    assert result.permission_denials == []
    [record] = read_log(env)
    assert "--permission-prompt-tool=stdio" in record["argv"]


async def test_can_use_tool_denies_and_the_tool_never_runs(tmp_path: Path) -> None:
    calls: list[dict[str, Any]] = []

    async def deny(
        name: str, tool_input: dict[str, Any], context: ToolPermissionContext
    ) -> PermissionResultDeny:
        return PermissionResultDeny(message="not today")

    env = write_scenario(tmp_path, [ADD_TURN])
    opts = options(env, mcp_servers={"calc": calc_server(calls)}, can_use_tool=deny)
    with anyio.fail_after(TIMEOUT):
        messages = [m async for m in query(prompt=one_prompt("add"), options=opts)]

    assert calls == []
    [result_block] = blocks(messages, ToolResultBlock)
    assert (result_block.content, result_block.is_error) == ("not today", True)
    result = messages[-1]
    assert isinstance(result, ResultMessage)
    assert result.permission_denials == [
        {"tool_name": "mcp__calc__add", "tool_use_id": "toolu_add", "tool_input": {"a": 2, "b": 3}}
    ]


async def test_a_disallowed_tool_is_denied_without_asking(tmp_path: Path) -> None:
    asked: list[str] = []

    async def allow(
        name: str, tool_input: dict[str, Any], context: ToolPermissionContext
    ) -> PermissionResultAllow:
        asked.append(name)
        return PermissionResultAllow()

    env = write_scenario(tmp_path, [[{"type": "tool_use", "name": "Bash", "input": {}}]])
    opts = options(env, can_use_tool=allow, disallowed_tools=["Bash"])
    with anyio.fail_after(TIMEOUT):
        messages = [m async for m in query(prompt=one_prompt("run"), options=opts)]

    assert asked == []
    [result_block] = blocks(messages, ToolResultBlock)
    assert result_block.is_error
    assert "Bash" not in of_type(messages, SystemMessage)[0].data["tools"]


async def test_interrupt_mid_answer_ends_the_turn_and_the_next_prompt_is_served(
    tmp_path: Path,
) -> None:
    turns: list[Turn] = [
        [
            {"type": "text", "text": "Counting 1 2 3", "partial": True},
            {"type": "wait_for_interrupt"},
        ],
        [{"type": "text", "text": "Fresh answer."}],
    ]
    env = write_scenario(tmp_path, turns)
    opts = options(env, include_partial_messages=True)
    with anyio.fail_after(TIMEOUT):
        async with ClaudeSDKClient(options=opts) as client:
            await client.query("count")
            first: list[Message] = []
            async for message in client.receive_response():
                first.append(message)
                if text_deltas([message]) and len(text_deltas(first)) == 1:
                    await client.interrupt()
            await client.query("again")
            second = [m async for m in client.receive_response()]

    assert "Counting 1 2 3".startswith("".join(text_deltas(first)))
    assert blocks(first, TextBlock)[-1].text == "[Request interrupted by user]"
    interrupted = first[-1]
    assert isinstance(interrupted, ResultMessage)
    assert (interrupted.subtype, interrupted.is_error) == ("error_during_execution", True)
    assert interrupted.terminal_reason == "aborted_streaming"
    result = second[-1]
    assert isinstance(result, ResultMessage)
    assert (result.is_error, result.result) == (False, "Fresh answer.")
    assert result.session_id == interrupted.session_id
    [record] = read_log(env)
    assert [r["subtype"] for r in record["control_requests"]] == ["initialize", "interrupt"]
    assert record["prompts"] == ["count", "again"]


async def test_resume_passes_the_session_id_and_the_fake_keeps_it(tmp_path: Path) -> None:
    messages, env = await run_query(
        tmp_path, [[{"type": "text", "text": "back again"}]], resume="sess-1234"
    )

    assert of_type(messages, SystemMessage)[0].data["session_id"] == "sess-1234"
    result = messages[-1]
    assert isinstance(result, ResultMessage)
    assert result.session_id == "sess-1234"
    [record] = read_log(env)
    assert "--resume=sess-1234" in record["argv"]
    assert record["flags"]["resume"] == "sess-1234"


async def test_fork_session_gets_a_new_session_id(tmp_path: Path) -> None:
    messages, _ = await run_query(
        tmp_path, [[{"type": "text", "text": "forked"}]], resume="sess-1234", fork_session=True
    )

    result = messages[-1]
    assert isinstance(result, ResultMessage)
    assert result.session_id not in ("sess-1234", "")


async def test_set_permission_mode_lets_a_tool_run_without_asking(tmp_path: Path) -> None:
    calls: list[dict[str, Any]] = []
    asked: list[str] = []

    async def deny(
        name: str, tool_input: dict[str, Any], context: ToolPermissionContext
    ) -> PermissionResultDeny:
        asked.append(name)
        return PermissionResultDeny(message="no")

    env = write_scenario(tmp_path, [ADD_TURN, ADD_TURN])
    opts = options(env, mcp_servers={"calc": calc_server(calls)}, can_use_tool=deny)
    with anyio.fail_after(TIMEOUT):
        async with ClaudeSDKClient(options=opts) as client:
            await client.query("add")
            [_ async for _ in client.receive_response()]
            await client.set_permission_mode("bypassPermissions")
            await client.query("add again")
            [_ async for _ in client.receive_response()]

    assert asked == ["mcp__calc__add"]
    assert calls == [{"a": 2, "b": 3}]


async def test_without_a_scenario_each_prompt_is_echoed(tmp_path: Path) -> None:
    env = {LOG_ENV: str(tmp_path / "log.jsonl")}
    with anyio.fail_after(TIMEOUT):
        messages = [m async for m in query(prompt="ping", options=options(env))]

    assert [b.text for b in blocks(messages, TextBlock)] == ["echo: ping"]


async def test_the_log_records_argv_and_the_auth_env_names_the_sdk_passed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("CLAUDE_CODE_OAUTH_TOKEN", raising=False)
    env = write_scenario(tmp_path, [[{"type": "text", "text": "ok"}]])
    opts = options(
        {**env, "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"},
        setting_sources=[],
        model="claude-test-model",
        system_prompt="Be brief.",
        permission_mode="acceptEdits",
    )
    with anyio.fail_after(TIMEOUT):
        messages = [m async for m in query(prompt="first prompt", options=opts)]

    [record] = read_log(env)
    assert "ANTHROPIC_BASE_URL" in record["env"]
    assert "ANTHROPIC_API_KEY" not in record["env"]
    assert "CLAUDE_CODE_OAUTH_TOKEN" not in record["env"]
    assert {"CLAUDE_CODE_ENTRYPOINT", "CLAUDE_AGENT_SDK_VERSION"} <= set(record["env"])
    assert record["flags"]["setting-sources"] == ""
    assert record["flags"]["model"] == "claude-test-model"
    assert record["flags"]["system-prompt"] == "Be brief."
    assert record["flags"]["permission-mode"] == "acceptEdits"
    assert record["flags"]["input-format"] == record["flags"]["output-format"] == "stream-json"
    assert record["prompts"] == ["first prompt"]
    assert record["control_requests"][0] == {"subtype": "initialize", "hooks": None}
    assert record["exit_code"] == 0
    init = of_type(messages, SystemMessage)[0]
    assert (init.data["model"], init.data["permissionMode"]) == ("claude-test-model", "acceptEdits")
    assert of_type(messages, AssistantMessage)[0].model == "claude-test-model"


async def test_an_error_result_reaches_the_caller_as_a_result_error(tmp_path: Path) -> None:
    env = write_scenario(
        tmp_path,
        [
            [
                {
                    "type": "error",
                    "subtype": "success",
                    "result": "API Error: 529",
                    "api_error_status": 529,
                }
            ]
        ],
    )
    seen: list[Message] = []
    with anyio.fail_after(TIMEOUT), pytest.raises(ResultError, match="API Error: 529"):
        async for message in query(prompt="hi", options=options(env)):
            seen.append(message)

    result = seen[-1]
    assert isinstance(result, ResultMessage)
    assert (result.subtype, result.is_error, result.api_error_status) == ("success", True, 529)
    assert read_log(env)[0]["exit_code"] == 1


async def test_a_prompt_past_the_scenario_gets_an_error_result(tmp_path: Path) -> None:
    env = write_scenario(tmp_path, [[{"type": "text", "text": "only one"}]])
    with anyio.fail_after(TIMEOUT):
        async with ClaudeSDKClient(options=options(env)) as client:
            await client.query("one")
            first = [m async for m in client.receive_response()]
            await client.query("two")
            second = [m async for m in client.receive_response()]

    assert isinstance(first[-1], ResultMessage) and not first[-1].is_error
    result = second[-1]
    assert isinstance(result, ResultMessage)
    assert result.is_error
    assert result.errors is not None and "scenario has 1 turns" in result.errors[0]


async def test_hooks_are_called_around_the_tool_and_a_pre_tool_deny_stops_it(
    tmp_path: Path,
) -> None:
    calls: list[dict[str, Any]] = []
    seen: list[tuple[str, str | None, Any]] = []

    async def record(
        hook_input: HookInput, tool_use_id: str | None, context: HookContext
    ) -> HookJSONOutput:
        fields = cast(dict[str, Any], hook_input)
        seen.append((fields["hook_event_name"], tool_use_id, fields.get("tool_response")))
        return {}

    async def block_second(
        hook_input: HookInput, tool_use_id: str | None, context: HookContext
    ) -> HookJSONOutput:
        if tool_use_id != "toolu_second":
            return {}
        return {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": "twice is too often",
            }
        }

    second = {**ADD_TURN[0], "id": "toolu_second"}
    env = write_scenario(tmp_path, [[ADD_TURN[0], second]])
    hooks: dict[Any, list[HookMatcher]] = {
        "PreToolUse": [HookMatcher(matcher="mcp__calc__.*", hooks=[record, block_second])],
        "PostToolUse": [HookMatcher(hooks=[record])],
    }
    opts = options(
        env,
        mcp_servers={"calc": calc_server(calls)},
        allowed_tools=["mcp__calc__add"],
        hooks=hooks,
    )
    with anyio.fail_after(TIMEOUT):
        messages = [m async for m in query(prompt=one_prompt("add twice"), options=opts)]

    assert calls == [{"a": 2, "b": 3}]
    assert seen == [
        ("PreToolUse", "toolu_add", None),
        ("PostToolUse", "toolu_add", [{"type": "text", "text": "5"}]),
        ("PreToolUse", "toolu_second", None),
    ]
    denied = blocks(messages, ToolResultBlock)[-1]
    assert (denied.content, denied.is_error) == ("twice is too often", True)


def test_the_fake_answers_the_version_check() -> None:
    done = subprocess.run(
        [sys.executable, str(fake_cli_path()), "-v"], capture_output=True, text=True, timeout=10
    )
    assert done.stdout.strip().endswith("(Claude Code)")


def test_a_terminated_fake_still_writes_its_log(tmp_path: Path) -> None:
    env = write_scenario(tmp_path, [])
    argv = [str(fake_cli_path()), "--output-format", "stream-json"]
    fake = subprocess.Popen(
        [*argv, "--verbose", "--input-format", "stream-json"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env={**os.environ, **env},
    )
    assert fake.stdin is not None and fake.stdout is not None
    fake.stdin.write(b'{"type": "control_request", "request_id": "r1", ')
    fake.stdin.write(b'"request": {"subtype": "initialize", "hooks": null}}\n')
    fake.stdin.flush()
    assert b'"request_id": "r1"' in fake.stdout.readline()
    fake.send_signal(signal.SIGTERM)
    assert fake.wait(timeout=10) == 128 + signal.SIGTERM
    fake.stdin.close()
    fake.stdout.close()
    [record] = read_log(env)
    assert record["exit_code"] == 128 + signal.SIGTERM
    assert record["control_requests"] == [{"subtype": "initialize", "hooks": None}]
