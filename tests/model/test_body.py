"""A request body in pieces (issue 19, item 24): the same bytes as the
codec's ``dict`` encoded whole, settled messages encoded once per history,
and a step's body built and sent without a buffer the size of the history.
"""

from __future__ import annotations

import tracemalloc
from typing import Any

import msgspec
import pytest

from kun.contracts.capabilities import ModelCapabilities
from kun.contracts.items import Item
from kun.contracts.model import CompletedChunk, ModelRequest, TextDeltaChunk, WireFormat
from kun.model.body import CHUNK, EncodedItems, RequestBody, encode_body
from kun.model.client import HttpModelClient
from kun.model.request_codec import RequestCodec, codec_for
from kun.testing.fake_provider import FakeProvider
from tests.model.fake_http import REQUEST, Script, client, collect, sse
from tests.model.request.histories import (
    CLAUDE_THINKING,
    DEEPSEEK_THINKING,
    FORMATS,
    TEXT_ONLY,
    TOOLS,
    call,
    result,
    say,
    think,
    user,
)
from tests.model.support import fixture

OPTIONS: dict[str, Any] = {"model": "m", "stream": True, "max_tokens": None}


def whole(codec: RequestCodec, request: ModelRequest, effort: str | None = None) -> bytes:
    return msgspec.json.encode(codec.encode(request, reasoning_effort=effort, **OPTIONS))


def pieces(codec: RequestCodec, request: ModelRequest, effort: str | None = None) -> RequestBody:
    return encode_body(codec, request, reasoning_effort=effort, **OPTIONS)


def turn(n: int, size: int = 64) -> tuple[Item, ...]:
    """One turn: a prompt, a (signed) step calling a tool that returns
    ``size`` bytes, and the answer."""
    return (
        user(n, f"Read part {n}."),
        think(n, f"Part {n} next.", f"sig-{n}"),
        call(f"toolu_{n}", path=f"part{n}.txt"),
        result(f"toolu_{n}", f"{n}:" + "x" * size),
        say(n, f"Part {n} read."),
    )


def history(turns: int, size: int = 64) -> tuple[Item, ...]:
    return tuple(item for n in range(turns) for item in turn(n, size))


CASES: list[tuple[WireFormat, ModelCapabilities, str | None, str | None]] = [
    ("chat_completions", TEXT_ONLY, None, None),
    ("chat_completions", DEEPSEEK_THINKING, "https://api.deepseek.com", "high"),
    ("responses", TEXT_ONLY, None, None),
    ("messages", TEXT_ONLY, None, None),
    ("messages", CLAUDE_THINKING, None, "high"),
    ("messages", DEEPSEEK_THINKING, "https://api.deepseek.com/anthropic", "high"),
]


def test_a_body_of_pieces_is_the_dict_encoded_whole() -> None:
    payload = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}, {}]}
    body = RequestBody.of(payload)
    assert body.join() == msgspec.json.encode(payload)
    assert len(body) == len(body.join())
    for other, encoded in [
        (RequestBody.of({"input": []}), b'{"input":[]}'),
        (RequestBody({"model": "m"}, None, []), b'{"model":"m"}'),
    ]:
        assert other.join() == encoded
        assert len(other) == len(encoded)


def test_small_pieces_are_joined_and_large_ones_sent_as_they_are() -> None:
    large = b'"' + b"y" * CHUNK + b'"'
    body = RequestBody({"model": "m"}, "messages", [b"1"] * 5000 + [large, b"2"])
    chunks = list(body.chunks())
    assert b"".join(chunks) == body.join()
    assert large in chunks
    assert all(len(c) < 2 * CHUNK for c in chunks)
    assert len(chunks) < 6


def test_encoded_items_are_kept_for_the_same_message_and_forgotten_when_unused() -> None:
    kept = EncodedItems()
    first, second = say(1, "One."), say(2, "Two.")
    kept.begin()
    one = kept.items(first, lambda: [{"text": "One."}])
    kept.items(second, lambda: [{"text": "Two."}])
    kept.begin()
    assert kept.items(first, lambda: pytest.fail("built again")) is one
    assert kept.items(first, lambda: [{"text": "x"}], ("other",)) == [b'{"text":"x"}']
    kept.begin()
    again = kept.items(second, lambda: [{"text": "Two!"}])
    assert again == [b'{"text":"Two!"}']


@pytest.mark.parametrize(("fmt", "capabilities", "url", "effort"), CASES)
def test_every_step_of_a_thread_is_byte_for_byte_the_whole_body(
    fmt: WireFormat, capabilities: ModelCapabilities, url: str | None, effort: str | None
) -> None:
    """A warm codec (every step of the thread before) gives the bytes a
    fresh codec gives by encoding the ``dict`` whole."""
    warm = codec_for(fmt, capabilities=capabilities, endpoint_url=url)
    items = history(6)
    for end in range(1, len(items) + 1):
        request = ModelRequest(system_prompt="sys", history=items[:end], tools=TOOLS)
        fresh = codec_for(fmt, capabilities=capabilities, endpoint_url=url)
        assert pieces(warm, request, effort).join() == whole(fresh, request, effort), end
        with_context = ModelRequest(
            system_prompt="sys", history=items[:end], tools=TOOLS, context_instructions="Now."
        )
        assert pieces(warm, with_context, effort).join() == whole(fresh, with_context, effort)


@pytest.mark.parametrize(("fmt", "capabilities", "url", "effort"), CASES)
def test_settled_messages_are_encoded_once(
    fmt: WireFormat, capabilities: ModelCapabilities, url: str | None, effort: str | None
) -> None:
    """The next step reuses the very ``bytes`` of every earlier message
    (Anthropic: every turn but the last few, which carry the breakpoints)."""
    codec = codec_for(fmt, capabilities=capabilities, endpoint_url=url)
    items = history(8)
    before = pieces(codec, ModelRequest(history=items[:-5], tools=TOOLS), effort).items
    after = pieces(codec, ModelRequest(history=items, tools=TOOLS), effort).items
    settled = len(before) - (4 if fmt == "messages" else 1)
    assert settled > 10
    assert all(a is b for a, b in zip(before[:settled], after, strict=False))


def test_only_the_histories_used_last_keep_their_bytes() -> None:
    """The encoded items copy a history's text: a codec serving many
    threads (or a thread compacted many times) keeps them for four."""
    codec = codec_for("chat_completions")
    threads = [
        tuple(msgspec.structs.replace(item, id=f"t{n}-{item.id}") for item in history(3))
        for n in range(6)
    ]
    first = [pieces(codec, ModelRequest(history=t)).items for t in threads]
    kept = []
    for n in reversed(range(6)):
        again = pieces(codec, ModelRequest(history=threads[n])).items
        kept.append(again[0] is first[n][0])
    assert kept == [True, True, True, True, False, False]


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_step_allocates_far_less_than_its_history(fmt: WireFormat) -> None:
    """Four MiB of settled tool output: building and streaming the next
    step's body allocates a few chunks, not a copy of the history (the
    whole-body encoding needs at least one)."""
    codec = codec_for(fmt, capabilities=TEXT_ONLY)
    items = history(40, size=100_000)
    for chunk in pieces(codec, ModelRequest(history=items[:-5], tools=TOOLS)).chunks():
        assert chunk
    tracemalloc.start()
    try:
        body = pieces(codec, ModelRequest(history=items, tools=TOOLS))
        size = len(body)
        for chunk in body.chunks():
            assert chunk
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert size > 4_000_000
    assert peak < size // 8


@pytest.mark.anyio
async def test_the_client_sends_the_pieces_with_their_exact_length() -> None:
    script = Script(sse(fixture("cc_plain_text.sse")))
    model = client(script)
    await collect(model)
    (sent,) = script.requests
    assert "transfer-encoding" not in sent.headers
    assert int(sent.headers["content-length"]) == len(sent.content)
    body = codec_for("chat_completions").encode(
        REQUEST, model="model-x", stream=True, max_tokens=None, reasoning_effort=None
    )
    assert sent.content == msgspec.json.encode(body)


@pytest.mark.anyio
@pytest.mark.parametrize("record", [True, False])
async def test_a_large_body_crosses_a_real_socket_intact(record: bool) -> None:
    """Through uvicorn on 127.0.0.1: the body arrives whole, with its exact
    length; a provider told not to record keeps nothing (a long benchmark)."""
    request = ModelRequest(system_prompt="sys", history=history(12, size=50_000), tools=TOOLS)
    reply = [TextDeltaChunk(text="ok"), CompletedChunk(stop_reason="stop")]
    async with FakeProvider([reply], format="messages", record=record) as provider:
        async with HttpModelClient("fake", "m", provider.base_url, "messages") as model:
            assert isinstance((await collect(model, request))[-1], CompletedChunk)
        if not record:
            assert provider.requests == []
            return
        (sent,) = provider.requests
    body = codec_for("messages").encode(
        request, model="m", stream=True, max_tokens=None, reasoning_effort=None
    )
    assert sent.body == msgspec.json.encode(body)
    assert int(sent.headers["content-length"]) == len(sent.body) > 600_000
    assert "transfer-encoding" not in sent.headers
