"""The loopback fake provider through a real socket: byte-exact streams in
the three wire formats, and its faults as a client sees them."""

from __future__ import annotations

import asyncio
import threading
import time

import anyio
import msgspec
import pytest

from kun.contracts.model import (
    CompletedChunk,
    ErrorChunk,
    ModelStreamChunk,
    ReasoningDeltaChunk,
    TextDeltaChunk,
    ToolCallCompleteChunk,
    ToolCallDeltaChunk,
    UsageChunk,
    WireFormat,
)
from kun.contracts.usage import UsageSnapshot
from kun.testing.fake_provider import FakeProvider, FakeResponse
from kun.testing.wire import render_stream

from .support import Received, call

pytestmark = pytest.mark.anyio

FORMATS: list[WireFormat] = ["chat_completions", "responses", "messages"]
LS_ARGS = '{"dir":"."}'
USAGE = UsageChunk(
    usage=UsageSnapshot(
        prompt_tokens=1200, completion_tokens=80, cache_hit_tokens=1000, cache_miss_tokens=200
    ),
    request_id="req_abc",
    model="fake-model-1",
)


def settled(call_id: str, name: str, arguments: str, index: int) -> ToolCallCompleteChunk:
    return ToolCallCompleteChunk(
        call_id=call_id,
        name=name,
        arguments=msgspec.Raw(arguments.encode()),
        arguments_text=arguments,
        index=index,
    )


def script(format: WireFormat) -> list[ModelStreamChunk]:
    """Reasoning, text (multi-byte, U+2028), two parallel calls with their
    arguments in fragments, usage: in the order the format's decoder emits
    them (Messages streams one block at a time; the others interleave)."""
    a0 = ToolCallDeltaChunk(call_id="call_a", name="read_file", index=0)
    a1 = ToolCallDeltaChunk(call_id="call_a", arguments='{"path":', index=0)
    a2 = ToolCallDeltaChunk(call_id="call_a", arguments='"a.py"}', index=0)
    b0 = ToolCallDeltaChunk(call_id="call_b", name="list_dir", index=1)
    b1 = ToolCallDeltaChunk(call_id="call_b", arguments='{"dir":"src"}', index=1)
    a = settled("call_a", "read_file", '{"path":"a.py"}', 0)
    b = settled("call_b", "list_dir", '{"dir":"src"}', 1)
    head: list[ModelStreamChunk] = [
        ReasoningDeltaChunk(text="Let me look"),
        ReasoningDeltaChunk(text=" around…"),
        TextDeltaChunk(text="Checking 😀 files\u2028now. "),
    ]
    if format == "messages":
        head.append(ReasoningDeltaChunk(text="", signature="sig-1"))
        head.append(TextDeltaChunk(text="Café."))
        calls: list[ModelStreamChunk] = [a0, a1, a2, a, b0, b1, b]
    else:
        calls = [a0, b0, a1, b1, a2, a, b]
    return [*head, *calls, USAGE, CompletedChunk(stop_reason="tool_calls")]


@pytest.mark.parametrize("format", FORMATS)
async def test_each_format_round_trips_a_script_exactly(format: WireFormat) -> None:
    chunks = script(format)
    async with FakeProvider([chunks], format=format) as fp:
        got = await call(fp.base_url, format)
    assert got.status == 200
    assert got.headers["content-type"].startswith("text/event-stream")
    assert got.chunks == chunks
    assert got.body == render_stream(format, chunks)


@pytest.mark.parametrize("format", FORMATS)
async def test_crlf_framing_and_keepalive_comments(format: WireFormat) -> None:
    chunks = script(format)
    response = FakeResponse(chunks=tuple(chunks), crlf=True, keepalive_every=2)
    async with FakeProvider([response], format=format) as fp:
        got = await call(fp.base_url, format)
    assert b"\r\n\r\n" in got.body
    assert b"\n\n" not in got.body.replace(b"\r\n", b"")
    assert got.comments > 3
    assert got.chunks == chunks


@pytest.mark.parametrize("format", FORMATS)
async def test_pieces_split_mid_character_decode_the_same(format: WireFormat) -> None:
    chunks = script(format)
    body = render_stream(format, chunks)
    cut = body.index("😀".encode()) + 2
    response = FakeResponse(chunks=tuple(chunks), pieces=(cut, 7, 1, 64))
    async with FakeProvider([response], format=format) as fp:
        got = await call(fp.base_url, format)
    assert got.body == body
    assert {cut, cut + 7, cut + 8} <= got.boundaries
    with pytest.raises(UnicodeDecodeError):
        got.reads[0].decode()
    assert got.chunks == chunks


@pytest.mark.parametrize("truncate", ["close", "end"])
@pytest.mark.parametrize("format", FORMATS)
async def test_truncated_stream_is_stream_truncated(format: WireFormat, truncate: str) -> None:
    chunks = script(format)
    body = render_stream(format, chunks)
    response = FakeResponse(
        chunks=tuple(chunks),
        truncate_at=body.index(b"a.py"),
        truncate="close" if truncate == "close" else "end",
    )
    async with FakeProvider([response], format=format) as fp:
        got = await call(fp.base_url, format)
    assert (got.broken is not None) == (truncate == "close")
    last = got.chunks[-1]
    assert isinstance(last, ErrorChunk)
    assert last.code == "stream_truncated"
    assert not any(isinstance(c, ToolCallCompleteChunk | CompletedChunk) for c in got.chunks)


async def test_missing_finish_reason_and_done_is_truncated_but_done_alone_completes() -> None:
    chunks: list[ModelStreamChunk] = [TextDeltaChunk(text="hi"), CompletedChunk()]
    script_ = [
        FakeResponse(chunks=tuple(chunks), finish_reason=False, done=False),
        FakeResponse(chunks=tuple(chunks), finish_reason=False),
    ]
    async with FakeProvider(script_, format="chat_completions") as fp:
        neither = await call(fp.base_url, "chat_completions")
        bare_done = await call(fp.base_url, "chat_completions")
    assert isinstance(neither.chunks[-1], ErrorChunk)
    assert neither.chunks[-1].code == "stream_truncated"
    assert bare_done.chunks == chunks


async def test_status_and_retry_after_reach_the_client() -> None:
    limited = FakeResponse(status=429, retry_after="2")
    async with FakeProvider([limited, [TextDeltaChunk(text="ok")]], format="messages") as fp:
        first = await call(fp.base_url, "messages")
        second = await call(fp.base_url, "messages")
    assert first.status == 429
    assert first.headers["retry-after"] == "2"
    assert msgspec.json.decode(first.body)["error"]["type"] == "rate_limit_error"
    assert second.status == 200
    assert second.chunks[0] == TextDeltaChunk(text="ok")


async def test_requests_are_recorded() -> None:
    body = {"model": "m", "input": [{"role": "user", "content": "héllo"}], "stream": True}
    async with FakeProvider([[CompletedChunk()]]) as fp:
        await call(
            fp.base_url,
            "responses",
            path="responses?api-version=1",
            body=body,
            headers={"authorization": "Bearer sk-test"},
        )
    [recorded] = fp.requests
    assert (recorded.method, recorded.path, recorded.query) == (
        "POST",
        "/v1/responses",
        "api-version=1",
    )
    assert recorded.headers["authorization"] == "Bearer sk-test"
    assert recorded.headers["content-type"] == "application/json"
    assert recorded.json == {
        "model": "m",
        "input": [{"role": "user", "content": "héllo"}],
        "stream": True,
    }
    assert msgspec.json.decode(recorded.body) == recorded.json


@pytest.mark.parametrize(
    ("format", "header"),
    [
        (
            "chat_completions",
            [ToolCallDeltaChunk(call_id="c1", name="ls", arguments='{"dir":"."}')],
        ),
        ("responses", []),
        ("messages", [ToolCallDeltaChunk(call_id="c1", name="ls")]),
    ],
)
async def test_json_answer_to_a_streaming_request(
    format: WireFormat, header: list[ModelStreamChunk]
) -> None:
    """Materialized in each decoder's own way: chat completions reads the
    message as one delta, Responses settles calls at once, Messages opens
    the tool_use block and settles it."""
    head: list[ModelStreamChunk] = [ReasoningDeltaChunk(text="hm"), TextDeltaChunk(text="done")]
    tail: list[ModelStreamChunk] = [
        settled("c1", "ls", LS_ARGS, 0),
        USAGE,
        CompletedChunk(stop_reason="tool_calls"),
    ]
    response = FakeResponse(chunks=(*head, *header, *tail), as_json=True)
    async with FakeProvider([response]) as fp:
        got = await call(fp.base_url, format)
    assert got.headers["content-type"] == "application/json"
    assert got.headers["content-length"] == str(len(got.body))
    assert got.chunks == [*head, *header, *tail]


async def test_one_write_per_event() -> None:
    chunks = [TextDeltaChunk(text=str(i)) for i in range(20)] + [CompletedChunk()]
    async with FakeProvider([FakeResponse(chunks=tuple(chunks), per_event=True)]) as fp:
        got = await call(fp.base_url, "chat_completions")
    assert len(got.reads) == got.body.count(b"\n\n")
    assert all(read.endswith(b"\n\n") for read in got.reads)
    assert got.chunks == chunks


async def test_a_stall_is_a_gap_between_reads() -> None:
    chunks: list[ModelStreamChunk] = [
        TextDeltaChunk(text="before"),
        TextDeltaChunk(text="after"),
        CompletedChunk(),
    ]
    stall_at = render_stream("chat_completions", chunks).index(b'"after"')
    response = FakeResponse(chunks=tuple(chunks), stalls=((stall_at, 0.3),))
    async with FakeProvider([response], format="chat_completions") as fp:
        started = time.monotonic()
        got = await call(fp.base_url, "chat_completions")
        elapsed = time.monotonic() - started
    assert elapsed >= 0.3
    assert stall_at in got.boundaries
    assert got.chunks == chunks


async def test_a_stalled_client_times_out_and_the_provider_still_stops_at_once() -> None:
    response = FakeResponse(chunks=(TextDeltaChunk(text="x"), CompletedChunk()), stalls=((40, 60),))
    async with FakeProvider([response], format="chat_completions") as fp:
        with anyio.move_on_after(0.2) as scope:
            await call(fp.base_url, "chat_completions")
        assert scope.cancelled_caught
        started = time.monotonic()
    assert time.monotonic() - started < 1.5


STALL_S = 60


async def test_shutdown_with_a_client_still_reading_a_stalled_stream() -> None:
    """Shutdown ends a stream stalled for a minute at once; the reader sees
    it truncated. (It waits for the request to arrive, not a fixed time, so
    a loaded machine cannot make the shutdown come first.)"""
    response = FakeResponse(
        chunks=(TextDeltaChunk(text="x"), CompletedChunk()), stalls=((40, STALL_S),)
    )
    got: list[Received] = []
    started = time.monotonic()
    async with anyio.create_task_group() as group:
        async with FakeProvider([response], format="chat_completions") as fp:

            async def reader() -> None:
                got.append(await call(fp.base_url, "chat_completions"))

            group.start_soon(reader)
            for _ in range(3000):
                if fp.requests:
                    break
                await anyio.sleep(0.01)
    assert time.monotonic() - started < STALL_S / 2
    [received] = got
    assert received.chunks[-1] == ErrorChunk(
        message="the stream ended before the provider said it was complete",
        code="stream_truncated",
    )


async def test_running_out_of_script_is_501() -> None:
    async with FakeProvider([]) as fp:
        got = await call(fp.base_url, "chat_completions")
    assert got.status == 501
    assert msgspec.json.decode(got.body)["error"]["type"] == "script_exhausted"


async def test_no_threads_or_tasks_outlive_the_provider() -> None:
    threads, tasks = threading.active_count(), len(asyncio.all_tasks())
    with anyio.move_on_after(0.3):
        async with FakeProvider([[TextDeltaChunk(text="x")]], format="messages") as fp:
            await call(fp.base_url, "messages")
            await anyio.sleep(10)
    assert threading.active_count() == threads
    assert len(asyncio.all_tasks()) == tasks
