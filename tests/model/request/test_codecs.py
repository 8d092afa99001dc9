"""What each codec does beyond the golden bodies: edge cases of each format."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from kun.contracts.capabilities import ModelCapabilities
from kun.contracts.items import Item
from kun.contracts.model import ModelRequest, WireFormat
from kun.model.request.anthropic import FIRST_USER_TURN, cache_breakpoints
from kun.model.request_codec import (
    ChatCompletionsCodec,
    MessagesCodec,
    ResponsesCodec,
    codec_for,
)

from .histories import (
    CASES,
    CLAUDE_THINKING,
    FORMATS,
    MODEL,
    SCREENSHOT,
    VISION,
    call,
    load,
    result,
    say,
    think,
    user,
)
from .rules import violations


def encode(
    fmt: WireFormat,
    history: tuple[Item, ...],
    *,
    capabilities: ModelCapabilities | None = None,
    effort: str | None = None,
    max_tokens: int | None = None,
    stream: bool = True,
    **fields: Any,
) -> dict[str, Any]:
    codec = codec_for(fmt, capabilities=capabilities or VISION, load_attachment=load)
    body = codec.encode(
        ModelRequest(history=history, **fields),
        model=MODEL[fmt],
        stream=stream,
        max_tokens=max_tokens,
        reasoning_effort=effort,
    )
    decoded: dict[str, Any] = msgspec.json.decode(msgspec.json.encode(body))
    return decoded


@pytest.mark.parametrize(("case", "fmt"), [(c, f) for c in CASES for f in FORMATS])
def test_every_golden_body_keeps_the_providers_rules(case: str, fmt: WireFormat) -> None:
    assert violations(fmt, CASES[case].encode(fmt)) == []


def test_codec_for_builds_the_formats_codec() -> None:
    assert isinstance(codec_for("chat_completions"), ChatCompletionsCodec)
    assert isinstance(codec_for("responses"), ResponsesCodec)
    assert isinstance(codec_for("messages"), MessagesCodec)


def test_anthropic_merges_same_role_messages_so_roles_alternate() -> None:
    history = (
        user(1, "one"),
        user(2, "two"),
        say(1, "a"),
        call("c1"),
        result("c1", "r"),
        say(2, "b"),
    )
    body = encode("messages", history)
    assert [t["role"] for t in body["messages"]] == ["user", "assistant", "user", "assistant"]
    assert [b["text"] for b in body["messages"][0]["content"]] == ["one", "two"]


def test_anthropic_conversation_never_starts_with_the_assistant() -> None:
    body = encode("messages", (say(1, "Welcome back."), user(1, "Hi")))
    first = body["messages"][0]
    assert first == {"role": "user", "content": [{"type": "text", "text": FIRST_USER_TURN}]}
    assert violations("messages", body) == []


def test_anthropic_late_system_opens_a_user_turn_after_the_assistant() -> None:
    body = encode("messages", (user(1, "Hi"), say(1, "Hello")), context_instructions="ctx")
    assert body["messages"][-1] == {"role": "user", "content": [{"type": "text", "text": "ctx"}]}
    assert "cache_control" in body["messages"][-2]["content"][-1]


def test_anthropic_context_alone_and_leading_system_blocks() -> None:
    body = encode("messages", (), system_prompt="S", persona="P", context_instructions="C")
    assert [b["text"] for b in body["system"]] == ["S", "P"]
    assert "cache_control" not in body["system"][0]
    assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "C"}]}]
    assert cache_breakpoints(body) == 1


def test_anthropic_tool_images_are_siblings_after_every_result() -> None:
    history = (
        user(1, "shots"),
        call("c1", "shot"),
        call("c2", "shot"),
        result("c1", "one", name="shot", attachments=(SCREENSHOT,)),
        result("c2", "two", name="shot", attachments=(SCREENSHOT,)),
    )
    body = encode("messages", history)
    kinds = [b["type"] for b in body["messages"][-1]["content"]]
    assert kinds == ["tool_result", "tool_result", "text", "image", "text", "image"]
    assert violations("messages", body) == []


def test_anthropic_max_tokens() -> None:
    history = (user(1, "Hi"),)
    assert encode("messages", history)["max_tokens"] == 8192
    assert encode("messages", history, max_tokens=100)["max_tokens"] == 100
    thinking = encode("messages", history, capabilities=CLAUDE_THINKING, effort="low")
    assert thinking["max_tokens"] == 32768
    assert thinking["thinking"] == {"type": "enabled", "budget_tokens": 8192}


def test_anthropic_error_results_are_flagged() -> None:
    history = (user(1, "x"), call("c1"), result("c1", "boom", is_error=True))
    block = encode("messages", history)["messages"][-1]["content"][0]
    assert block["is_error"] is True


def test_chat_tool_images_follow_all_tool_messages_in_one_user_message() -> None:
    history = (
        user(1, "shots"),
        call("c1", "shot"),
        call("c2", "shot"),
        result("c1", "one", name="shot", attachments=(SCREENSHOT,)),
        result("c2", "two", name="shot"),
        user(2, "next"),
    )
    body = encode("chat_completions", history)
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["user", "assistant", "tool", "tool", "user", "user"]
    synthetic = body["messages"][4]["content"]
    assert synthetic[0] == {"type": "text", "text": "Images returned by tool call c1 (shot):"}
    assert synthetic[1]["image_url"]["url"].startswith("data:image/png;base64,")
    assert violations("chat_completions", body) == []


def test_chat_without_streaming_has_no_stream_options() -> None:
    body = encode("chat_completions", (user(1, "x"),), stream=False, max_tokens=5)
    assert "stream_options" not in body
    assert body["max_tokens"] == 5


def test_responses_puts_a_steps_text_before_its_calls_and_outputs_right_after() -> None:
    history = (
        user(1, "x"),
        think(1, "hidden"),
        say(1, "First."),
        call("c1"),
        say(2, "Then."),
        result("c1", "r"),
    )
    body = encode("responses", history, max_tokens=10)
    kinds = [i.get("type", i.get("role")) for i in body["input"]]
    assert kinds == ["user", "assistant", "function_call", "function_call_output"]
    assert body["input"][1]["content"] == "First.\n\nThen."
    assert b"hidden" not in msgspec.json.encode(body)
    assert body["max_output_tokens"] == 10
    assert "stream_options" not in body


def test_responses_tools_are_flat_and_not_strict() -> None:
    body = encode("responses", (user(1, "x"),), tools=CASES["plain_chat"].request().tools)
    assert body["tools"][0] == {
        "type": "function",
        "name": "read_file",
        "description": "Read a file.",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        },
        "strict": False,
    }


@pytest.mark.parametrize("fmt", [f for f in FORMATS if f != "gemini"])
def test_tool_schemas_reach_the_wire_byte_for_byte(fmt: WireFormat) -> None:
    request = CASES["plain_chat"].request()
    body = codec_for(fmt).encode(
        request, model="m", stream=True, max_tokens=None, reasoning_effort=None
    )
    assert bytes(request.tools[0].parameters) in msgspec.json.encode(body)
