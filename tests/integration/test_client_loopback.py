"""HttpModelClient against the loopback provider: real HTTP on 127.0.0.1."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from kun.contracts.items import UserMessage
from kun.contracts.model import (
    CompletedChunk,
    ErrorChunk,
    ModelRequest,
    ModelStreamChunk,
    TextDeltaChunk,
    ToolCallCompleteChunk,
    UsageChunk,
    WireFormat,
)
from kun.contracts.usage import UsageSnapshot
from kun.model.client import HttpModelClient
from kun.model.retry import RetryPolicy
from kun.testing.fake_provider import FakeProvider, FakeResponse

pytestmark = pytest.mark.anyio

REQUEST = ModelRequest(
    system_prompt="You are terse.",
    history=(UserMessage(id="m1", text="Say hi"),),
)
ANSWER: tuple[ModelStreamChunk, ...] = (
    TextDeltaChunk(text="Hi"),
    TextDeltaChunk(text=" there."),
    UsageChunk(usage=UsageSnapshot(prompt_tokens=12, completion_tokens=3)),
    CompletedChunk(stop_reason="stop"),
)


async def _collect(client: HttpModelClient) -> list[ModelStreamChunk]:
    return [chunk async for chunk in client.stream(REQUEST)]


def _client(fp: FakeProvider, wire: WireFormat, **kwargs: Any) -> HttpModelClient:
    return HttpModelClient("fake", "fake-model", fp.base_url, wire, api_key="sk-test", **kwargs)


def _text(chunks: list[ModelStreamChunk]) -> str:
    return "".join(c.text for c in chunks if isinstance(c, TextDeltaChunk))


@pytest.mark.parametrize("wire", ["chat_completions", "responses", "messages"])
async def test_each_wire_format_streams_through_a_real_socket(wire: WireFormat) -> None:
    async with FakeProvider([FakeResponse(chunks=ANSWER)], format=wire) as fp:
        async with _client(fp, wire) as client:
            chunks = await _collect(client)
    assert _text(chunks) == "Hi there."
    assert isinstance(chunks[-1], CompletedChunk) and chunks[-1].stop_reason == "stop"
    assert [c.usage.prompt_tokens for c in chunks if isinstance(c, UsageChunk)] == [12]
    (sent,) = fp.requests
    assert sent.json["stream"] is True and sent.json["model"] == "fake-model"
    assert "sk-test" not in repr(client)


async def test_a_429_with_retry_after_is_retried_then_succeeds() -> None:
    script = [FakeResponse(status=429, retry_after="0"), FakeResponse(chunks=ANSWER)]
    async with FakeProvider(script, format="chat_completions") as fp:
        async with _client(fp, "chat_completions") as client:
            chunks = await _collect(client)
    assert _text(chunks) == "Hi there."
    assert len(fp.requests) == 2


async def test_a_connection_cut_mid_stream_is_not_a_clean_completion() -> None:
    cut = FakeResponse(chunks=ANSWER, truncate_at=60, truncate="end")
    async with FakeProvider([cut], format="chat_completions") as fp:
        async with _client(fp, "chat_completions", retry=RetryPolicy(max_attempts=1)) as client:
            chunks = await _collect(client)
    assert isinstance(chunks[-1], ErrorChunk)
    assert chunks[-1].code == "stream_truncated"
    assert not any(isinstance(c, CompletedChunk) for c in chunks)


async def test_a_stall_ends_with_an_idle_timeout_error() -> None:
    stalled = FakeResponse(chunks=ANSWER, stalls=((40, 5.0),))
    async with FakeProvider([stalled], format="chat_completions") as fp:
        async with _client(fp, "chat_completions", idle_timeout=0.2) as client:
            chunks = await _collect(client)
    assert isinstance(chunks[-1], ErrorChunk)
    assert chunks[-1].code == "stream_idle_timeout"


async def test_parallel_tool_calls_arrive_complete_and_in_order() -> None:
    calls = (
        ToolCallCompleteChunk(call_id="call_a", name="read_file", arguments=_raw('{"path":"a"}')),
        ToolCallCompleteChunk(call_id="call_b", name="grep", arguments=_raw('{"q":"x"}'), index=1),
        CompletedChunk(stop_reason="tool_calls"),
    )
    async with FakeProvider([FakeResponse(chunks=calls)], format="messages") as fp:
        async with _client(fp, "messages") as client:
            chunks = await _collect(client)
    done = [c for c in chunks if isinstance(c, ToolCallCompleteChunk)]
    assert [(c.call_id, c.name, bytes(c.arguments)) for c in done] == [
        ("call_a", "read_file", b'{"path":"a"}'),
        ("call_b", "grep", b'{"q":"x"}'),
    ]
    assert isinstance(chunks[-1], CompletedChunk) and chunks[-1].stop_reason == "tool_calls"


def _raw(text: str) -> msgspec.Raw:
    return msgspec.Raw(text.encode())
