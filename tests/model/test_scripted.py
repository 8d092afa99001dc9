"""ScriptedModelClient: replay, behaviour, clones, exhaustion, cancellation."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import anyio.lowlevel
import msgspec
import pytest

from kun.contracts.items import UserMessage
from kun.contracts.model import (
    CompletedChunk,
    ErrorChunk,
    ModelRequest,
    ModelStreamChunk,
    ReasoningDeltaChunk,
    TextDeltaChunk,
    ToolCallCompleteChunk,
    ToolSpec,
)
from kun.model.port import ModelClient
from kun.model.scripted import ScriptedCall, ScriptedModelClient, text_reply, tool_reply

pytestmark = pytest.mark.anyio


async def collect(stream: AsyncIterator[ModelStreamChunk]) -> list[ModelStreamChunk]:
    return [chunk async for chunk in stream]


def test_is_a_model_client() -> None:
    client: ModelClient = ScriptedModelClient(provider="p", model="m")
    assert (client.provider, client.model) == ("p", "m")


async def test_replays_responses_in_order() -> None:
    first: list[ModelStreamChunk] = [
        ReasoningDeltaChunk(text="hm"),
        TextDeltaChunk(text="a"),
        CompletedChunk(),
    ]
    client = ScriptedModelClient([first, text_reply("b")])
    assert await collect(client.stream(ModelRequest())) == first
    assert await collect(client.stream(ModelRequest())) == text_reply("b")


async def test_a_missing_terminal_chunk_is_added() -> None:
    calls = tool_reply("read", {"path": "a"})[:-1]
    client = ScriptedModelClient([[TextDeltaChunk(text="x")], calls])
    assert (await collect(client.stream(ModelRequest())))[-1] == CompletedChunk(stop_reason="stop")
    assert (await collect(client.stream(ModelRequest())))[-1] == CompletedChunk(
        stop_reason="tool_calls"
    )


def test_chunks_after_the_terminal_one_are_a_script_error() -> None:
    with pytest.raises(ValueError, match="after its terminal CompletedChunk"):
        ScriptedModelClient([[CompletedChunk(), TextDeltaChunk(text="late")]])


async def test_running_out_of_script_is_an_error_chunk() -> None:
    client = ScriptedModelClient([text_reply("only")])
    await collect(client.stream(ModelRequest()))
    chunks = await collect(client.stream(ModelRequest()))
    assert len(chunks) == 1
    assert isinstance(chunks[0], ErrorChunk)
    assert chunks[0].code == "script_exhausted"
    assert "call 2" in chunks[0].message


async def test_a_function_answers_from_the_request() -> None:
    def echo(request: ModelRequest) -> list[ModelStreamChunk]:
        last = request.history[-1]
        assert isinstance(last, UserMessage)
        if any(tool.name == "shout" for tool in request.tools):
            return tool_reply("shout", {"text": last.text})
        return text_reply(last.text.upper())

    client = ScriptedModelClient(echo)
    plain = ModelRequest(history=(UserMessage(id="u1", text="hi"),))
    assert await collect(client.stream(plain)) == text_reply("HI")
    offered = msgspec.structs.replace(plain, tools=(ToolSpec(name="shout"),))
    chunks = await collect(client.stream(offered))
    complete = [c for c in chunks if isinstance(c, ToolCallCompleteChunk)]
    assert msgspec.json.decode(complete[0].arguments) == {"text": "hi"}
    assert len(client.calls) == 2


async def test_a_function_may_stream_asynchronously_and_mix_with_fixed_responses() -> None:
    async def slow(request: ModelRequest) -> AsyncIterator[ModelStreamChunk]:
        for word in ("a", "b"):
            await anyio.lowlevel.checkpoint()
            yield TextDeltaChunk(text=word)

    client = ScriptedModelClient([slow, text_reply("fixed")])
    assert await collect(client.stream(ModelRequest())) == [
        TextDeltaChunk(text="a"),
        TextDeltaChunk(text="b"),
        CompletedChunk(),
    ]
    assert await collect(client.stream(ModelRequest())) == text_reply("fixed")


async def test_clones_share_the_script_and_record_their_settings() -> None:
    base = ScriptedModelClient([text_reply("1"), text_reply("2"), text_reply("3")])
    thinking = base.with_thinking("high")
    budget = thinking.with_max_completion_tokens(100)
    assert (base.thinking, thinking.thinking, budget.thinking) == (None, "high", "high")
    assert (thinking.max_completion_tokens, budget.max_completion_tokens) == (None, 100)
    request = ModelRequest(system_prompt="s")
    assert await collect(budget.stream(request)) == text_reply("1")
    assert await collect(base.stream(request)) == text_reply("2")
    assert await collect(thinking.stream(request)) == text_reply("3")
    assert base.calls == [
        ScriptedCall(request=request, thinking="high", max_completion_tokens=100),
        ScriptedCall(request=request),
        ScriptedCall(request=request, thinking="high"),
    ]
    assert budget.requests == [request] * 3


async def test_cancelling_the_consumer_stops_the_stream() -> None:
    client = ScriptedModelClient([[TextDeltaChunk(text=str(i)) for i in range(100)]], delay=0.01)
    seen: list[ModelStreamChunk] = []
    with anyio.move_on_after(0.05) as scope:
        async for chunk in client.stream(ModelRequest()):
            seen.append(chunk)
    assert scope.cancelled_caught
    assert 0 < len(seen) < 100


async def test_every_chunk_is_a_checkpoint() -> None:
    client = ScriptedModelClient([[TextDeltaChunk(text=str(i)) for i in range(10)]])
    seen: list[ModelStreamChunk] = []
    with anyio.CancelScope() as scope:
        async for chunk in client.stream(ModelRequest()):
            seen.append(chunk)
            scope.cancel()
    assert len(seen) == 1
