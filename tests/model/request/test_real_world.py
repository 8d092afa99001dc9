"""Request failures other agents shipped, each pinned by a test named after
its issue."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from kun.contracts.capabilities import ModelCapabilities
from kun.contracts.items import Item
from kun.contracts.model import ModelRequest, WireFormat
from kun.model.request_codec import codec_for

from .histories import (
    CLAUDE_THINKING,
    DEEPSEEK_THINKING,
    FORMATS,
    ID_FORMATS,
    MODEL,
    TOOLS,
    call,
    result,
    say,
    think,
    user,
)
from .rules import anthropic_violations, chat_violations, violations


def encode(
    fmt: WireFormat,
    history: tuple[Item, ...],
    *,
    capabilities: ModelCapabilities | None = None,
    url: str | None = None,
    effort: str | None = None,
    **fields: Any,
) -> dict[str, Any]:
    codec = codec_for(fmt, capabilities=capabilities or ModelCapabilities(), endpoint_url=url)
    request = ModelRequest(system_prompt="sys", history=history, **fields)
    body = codec.encode(
        request, model=MODEL[fmt], stream=True, max_tokens=None, reasoning_effort=effort
    )
    decoded: dict[str, Any] = msgspec.json.decode(msgspec.json.encode(body))
    return decoded


def blocks(body: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [b for turn in body["messages"] for b in turn["content"] if b["type"] == kind]


INTERRUPTED = (
    user(1, "Run the tests."),
    say(1, "Running them."),
    call("toolu_01A", "bash", command="pytest"),
    user(2, "Stop, run only test_app.py."),
)


@pytest.mark.parametrize("fmt", FORMATS)
def test_claude_code_1237_tool_use_without_result(fmt: WireFormat) -> None:
    """400 "tool_use ids were found without tool_result blocks immediately
    after": a call interrupted before its result must not be sent."""
    body = encode(fmt, INTERRUPTED, tools=TOOLS)
    assert violations(fmt, body) == []
    assert b"toolu_01A" not in msgspec.json.encode(body)


def test_claude_code_1237_user_message_between_call_and_result_moves_after_it() -> None:
    late = (*INTERRUPTED, result("toolu_01A", "3 passed"))
    body = encode("messages", late)
    assert anthropic_violations(body) == []
    answer = body["messages"][-1]["content"]
    assert [b["type"] for b in answer] == ["tool_result", "text"]
    assert answer[1]["text"] == "Stop, run only test_app.py."


def test_deepseek_anthropic_parallel_results_in_one_user_message() -> None:
    """DeepSeek's /anthropic refuses parallel results split over user messages."""
    history = (
        user(1, "Read both."),
        call("call_00_a", path="a.py"),
        call("call_01_b", path="b.py"),
        result("call_00_a", "A"),
        user(2, "(and hurry)", steered=True),
        result("call_01_b", "B"),
    )
    deepseek = ModelCapabilities(known=True, reasoning_protocol="deepseek-chat-completions")
    body = encode(
        "messages", history, capabilities=deepseek, url="https://api.deepseek.com/anthropic"
    )
    assert anthropic_violations(body) == []
    answer = body["messages"][-1]
    assert answer["role"] == "user"
    assert [b["type"] for b in answer["content"]] == ["tool_result", "tool_result", "text"]
    assert [b["tool_use_id"] for b in answer["content"][:2]] == ["call_00_a", "call_01_b"]


TOOL_LOOP = (
    user(1, "Fix the bug."),
    think(1, "Look at the failing test first.", signature="sig-1"),
    call("toolu_1", path="tests/test_app.py"),
    result("toolu_1", "def test_x(): ..."),
    call("toolu_2", path="src/app.py"),
    result("toolu_2", "def x(): ..."),
)


def test_opencode_3077_thinking_before_tool_use() -> None:
    """400 "Expected thinking or redacted_thinking, but found tool_use"."""
    body = encode("messages", TOOL_LOOP, capabilities=CLAUDE_THINKING, effort="high")
    assert body["thinking"]["type"] == "enabled"
    assert anthropic_violations(body) == []
    first_assistant = body["messages"][1]["content"]
    assert first_assistant[0] == {
        "type": "thinking",
        "thinking": "Look at the failing test first.",
        "signature": "sig-1",
    }


def test_opencode_3077_unsigned_reasoning_turns_thinking_off_for_the_request() -> None:
    """Reasoning that came from another model has no signature: the loop's
    first turn cannot start with thinking, so thinking is off, not a 400."""
    unsigned = (TOOL_LOOP[0], think(1, "from another model"), *TOOL_LOOP[2:])
    body = encode("messages", unsigned, capabilities=CLAUDE_THINKING, effort="high")
    assert "thinking" not in body
    assert blocks(body, "thinking") == []
    assert anthropic_violations(body) == []


def test_opencode_3077_thinking_off_sends_no_thinking_block() -> None:
    ends_thinking = (*TOOL_LOOP, say(3, "Fixed."), think(4, "done", signature="sig-4"))
    for effort in ("off", None):
        body = encode("messages", ends_thinking, capabilities=CLAUDE_THINKING, effort=effort)
        assert "thinking" not in body
        assert blocks(body, "thinking") == []
        assert body["messages"][-1]["content"][-1]["type"] == "text"
    on = encode("messages", ends_thinking, capabilities=CLAUDE_THINKING, effort="high")
    assert on["messages"][-1]["content"][-1]["type"] == "text"
    assert anthropic_violations(on) == []


def test_continue_6937_at_most_four_cache_breakpoints() -> None:
    history: list[Item] = []
    for n in range(12):
        history += [user(n, f"step {n}"), call(f"c{n}"), result(f"c{n}", "ok"), say(n, "ok")]
    body = encode(
        "messages",
        tuple(history),
        persona="persona",
        mode_instruction="mode",
        context_instructions="ctx",
        tools=TOOLS,
    )
    marked = [
        b
        for b in [*body["system"], *(b for t in body["messages"] for b in t["content"])]
        if "cache_control" in b
    ]
    assert len(marked) == 3
    assert "cache_control" in body["system"][-1]
    assert all("cache_control" not in tool for tool in body["tools"])
    assert anthropic_violations(body) == []


TURNS = (
    user(1, "Read it."),
    think(1, "Reading the file."),
    call("call_1", path="a.py"),
    result("call_1", "A"),
    call("call_2", path="b.py"),
    result("call_2", "B"),
    say(2, "Done."),
    user(2, "Thanks."),
    say(3, "You're welcome."),
    user(3, "Again?"),
)


def test_hermes_15228_reasoning_content_on_every_assistant_message() -> None:
    """DeepSeek thinking mode: "The reasoning_content in the thinking mode
    must be passed back to the API" — on every assistant message."""
    body = encode(
        "chat_completions",
        TURNS,
        capabilities=DEEPSEEK_THINKING,
        url="https://api.deepseek.com",
        effort="high",
    )
    assistants = [m for m in body["messages"] if m["role"] == "assistant"]
    assert len(assistants) == 4
    assert [m["reasoning_content"] for m in assistants] == ["Reading the file.", " ", " ", " "]
    assert chat_violations(body) == []


def test_opencode_4949_deepseek_reasoner_rejects_reasoning_content() -> None:
    reasoner = ModelCapabilities(
        known=True, reasoning_protocol="deepseek-chat-completions", reasoning_history="forbidden"
    )
    body = encode("chat_completions", TURNS, capabilities=reasoner, effort="high")
    assert all("reasoning_content" not in m for m in body["messages"])
    omitting = encode("chat_completions", TURNS, capabilities=ModelCapabilities(), effort="high")
    assert all("reasoning_content" not in m for m in omitting["messages"])


@pytest.mark.parametrize("fmt", FORMATS)
def test_kimi_cli_2233_no_empty_tools(fmt: WireFormat) -> None:
    """vLLM refuses ``tools: []``: no tools, no field."""
    assert "tools" not in encode(fmt, TURNS)
    tools = encode(fmt, TURNS, tools=TOOLS)["tools"]
    if fmt == "gemini":
        (tools,) = (t["functionDeclarations"] for t in tools)
    assert len(tools) == 2


ODD_IDS = ("__kun_stream_tool_call_index_0", "toolu_01XyZ", "call-with.dots:and/slashes", "0")


@pytest.mark.parametrize("fmt", ID_FORMATS)
def test_tool_call_ids_a_format_accepts_are_never_regenerated(fmt: WireFormat) -> None:
    """Unique ids go out as the log holds them where the format allows them;
    one it refuses (dots, colons, slashes on Responses and Anthropic) is
    rewritten, keeping its pairing (issue 8, item 13)."""
    history: list[Item] = [user(1, "go"), say(1, "Calling.")]
    history += [call(call_id) for call_id in ODD_IDS]
    history += [result(call_id, f"out {call_id}") for call_id in reversed(ODD_IDS)]
    body = encode(fmt, tuple(history))
    if fmt == "chat_completions":
        sent = [c["id"] for m in body["messages"] for c in m.get("tool_calls", ())]
        back = [m["tool_call_id"] for m in body["messages"] if m["role"] == "tool"]
    elif fmt == "responses":
        sent = [i["call_id"] for i in body["input"] if i.get("type") == "function_call"]
        back = [i["call_id"] for i in body["input"] if i.get("type") == "function_call_output"]
    else:
        sent = [b["id"] for b in blocks(body, "tool_use")]
        back = [b["tool_use_id"] for b in blocks(body, "tool_result")]
    expected = list(ODD_IDS)
    if fmt != "chat_completions":
        expected[2] = sent[2]
        assert sent[2].startswith("call-with_dots_and_slashes_")
    assert sent == back == expected
    assert violations(fmt, body) == []
