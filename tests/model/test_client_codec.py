"""The request codecs as the client uses them: what each wire format's body
holds for a text-only history (the call without a result is dropped). The
full matrix is in ``tests/model/request/``."""

from __future__ import annotations

from typing import Any

import msgspec

from kun.contracts.capabilities import ModelCapabilities
from kun.contracts.items import AssistantText, ToolCall, UserMessage
from kun.contracts.model import ModelRequest, ToolSpec
from kun.model.request_codec import (
    ANTHROPIC_DEFAULT_MAX_TOKENS,
    ChatCompletionsCodec,
    MessagesCodec,
    ResponsesCodec,
    codec_for,
)

SCHEMA = b'{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}'
REQUEST = ModelRequest(
    system_prompt="You are kun.",
    mode_instruction="Plan first.",
    prefix=(UserMessage(id="p", text="Earlier."),),
    history=(
        UserMessage(id="u1", text="List files."),
        AssistantText(id="a1", text="Sure."),
        ToolCall(id="t1", call_id="c1", name="ls", arguments=msgspec.Raw(b"{}")),
        AssistantText(id="a2", text=""),
        UserMessage(id="u2", text="Thanks."),
    ),
    context_instructions="Today is Monday.",
    tools=(ToolSpec(name="read", description="Read a file.", parameters=msgspec.Raw(SCHEMA)),),
)


def encode(codec: Any, **kwargs: Any) -> dict[str, Any]:
    options: dict[str, Any] = {
        "model": "m",
        "stream": True,
        "max_tokens": None,
        "reasoning_effort": None,
    }
    options.update(kwargs)
    body = codec.encode(REQUEST, **options)
    decoded: dict[str, Any] = msgspec.json.decode(msgspec.json.encode(body))
    return decoded


OPENAI_REASONING = ModelCapabilities(known=True, reasoning_protocol="openai-responses")


def test_chat_completions() -> None:
    codec = ChatCompletionsCodec(OPENAI_REASONING)
    body = encode(codec, max_tokens=100, reasoning_effort="high")
    assert [(m["role"], m["content"]) for m in body["messages"]] == [
        ("system", "You are kun."),
        ("system", "Plan first."),
        ("user", "Earlier."),
        ("user", "List files."),
        ("assistant", "Sure."),
        ("user", "Thanks."),
        ("system", "Today is Monday."),
    ]
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["max_tokens"] == 100
    assert body["reasoning_effort"] == "high"
    tool = body["tools"][0]
    assert tool["type"] == "function"
    assert tool["function"]["name"] == "read"


def test_chat_completions_without_stream_has_no_stream_options() -> None:
    body = encode(ChatCompletionsCodec(OPENAI_REASONING), stream=False, reasoning_effort="off")
    assert body["stream"] is False
    assert "stream_options" not in body
    assert "reasoning_effort" not in body
    assert "max_tokens" not in body


def test_tool_schema_bytes_are_sent_verbatim() -> None:
    body = ChatCompletionsCodec().encode(
        REQUEST, model="m", stream=True, max_tokens=None, reasoning_effort=None
    )
    assert SCHEMA in msgspec.json.encode(body)


def test_responses() -> None:
    body = encode(ResponsesCodec(OPENAI_REASONING), max_tokens=50, reasoning_effort="low")
    assert body["instructions"] == "You are kun.\n\nPlan first."
    assert body["input"][-1] == {"role": "developer", "content": "Today is Monday."}
    assert [i["role"] for i in body["input"]] == ["user", "user", "assistant", "user", "developer"]
    assert body["max_output_tokens"] == 50
    assert body["reasoning"] == {"effort": "low"}
    assert body["tools"][0]["name"] == "read"
    assert body["tools"][0]["type"] == "function"
    assert "stream_options" not in body


def test_messages() -> None:
    body = encode(MessagesCodec())
    assert body["system"] == [
        {"type": "text", "text": "You are kun."},
        {"type": "text", "text": "Plan first.", "cache_control": {"type": "ephemeral"}},
    ]
    assert body["max_tokens"] == ANTHROPIC_DEFAULT_MAX_TOKENS
    last = body["messages"][-1]
    assert last["role"] == "user"
    assert [b["text"] for b in last["content"]] == ["Thanks.", "Today is Monday."]
    assert "cache_control" in last["content"][0]
    assert "cache_control" not in last["content"][1]
    assert body["tools"][0]["input_schema"]["required"] == ["path"]
    assert "stream_options" not in body
    assert "thinking" not in encode(MessagesCodec(), reasoning_effort="high")


def test_messages_context_after_an_assistant_turn_opens_a_user_turn() -> None:
    request = ModelRequest(
        history=(UserMessage(id="u", text="Hi"), AssistantText(id="a", text="Hello")),
        context_instructions="ctx",
    )
    body = MessagesCodec().encode(
        request, model="m", stream=False, max_tokens=10, reasoning_effort=None
    )
    assert body["messages"][-1] == {"role": "user", "content": [{"type": "text", "text": "ctx"}]}
    assert body["messages"][-2]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert body["max_tokens"] == 10


def test_codec_for() -> None:
    assert isinstance(codec_for("chat_completions"), ChatCompletionsCodec)
    assert isinstance(codec_for("responses"), ResponsesCodec)
    assert isinstance(codec_for("messages"), MessagesCodec)
