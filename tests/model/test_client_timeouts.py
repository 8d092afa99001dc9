"""The idle timeout and abort, with real (millisecond) time: a stall ends
the stream, steady progress never does, keep-alives are not progress, and
cancelling the consumer closes the response at once. Nothing here asserts
how long anything took; ``fail_after`` only turns a hang into a failure."""

from __future__ import annotations

from contextlib import aclosing

import anyio
import pytest

from kun.contracts.model import ErrorChunk, ModelStreamChunk, TextDeltaChunk
from kun.model.client import HttpModelClient
from kun.model.errors import StreamIdleTimeout, error_from_chunk
from kun.model.reading import CallStats

from .fake_http import REQUEST, Answer, Script, Stream, client, collect, split, sse
from .support import error, fixture, stop_reason, text

pytestmark = pytest.mark.anyio

HANG = 10.0


def frames(name: str) -> list[bytes]:
    """A fixture cut into its events, each with its blank line."""
    return [frame + b"\n\n" for frame in fixture(name).split(b"\n\n") if frame]


async def run(model: HttpModelClient) -> list[ModelStreamChunk]:
    with anyio.fail_after(HANG):
        return await collect(model)


async def test_stall_ends_with_stream_idle_timeout_and_closes() -> None:
    first = frames("cc_plain_text.sse")[:2]
    stream = Stream(first, hang=True)
    chunks = await run(client(Script(sse(stream)), idle_timeout=0.05))
    last = error(chunks)
    assert last.code == "stream_idle_timeout"
    assert isinstance(error_from_chunk(last), StreamIdleTimeout)
    assert text(chunks) == "Hello"
    assert stream.closed


async def test_no_response_at_all_is_an_idle_timeout() -> None:
    script = Script(Answer(lambda: pytest.fail("never built"), delay=None))
    last = error(await run(client(script, idle_timeout=0.05)))
    assert last.code == "stream_idle_timeout"
    assert script.posts == 1


async def test_slow_steady_stream_longer_than_the_timeout_lives() -> None:
    pieces = frames("cc_plain_text.sse")
    stream = Stream(pieces, gap=0.05)
    chunks = await run(client(Script(sse(stream)), idle_timeout=0.3))
    assert len(pieces) * 0.05 > 0.3
    assert stop_reason(chunks) == "stop"
    assert text(chunks) == "Hello, world!"


async def test_a_long_frame_in_slow_pieces_is_not_cut_before_its_end() -> None:
    data = fixture("cc_plain_text.sse")
    stream = Stream(split(data, 200), gap=0.01)
    chunks = await run(client(Script(sse(stream)), idle_timeout=0.5))
    assert stop_reason(chunks) == "stop"


async def test_keepalive_comments_alone_do_not_keep_a_stream_alive() -> None:
    seen: list[CallStats] = []
    first = frames("cc_plain_text.sse")[:2]
    stream = Stream(first, tail=b": keep-alive\n\n", tail_gap=0.01)
    model = client(Script(sse(stream)), idle_timeout=0.15, on_stats=seen.append)
    last = error(await run(model))
    assert last.code == "stream_idle_timeout"
    assert seen[0].comments > 3
    assert seen[0].outcome == "stream_idle_timeout"
    assert stream.closed


async def test_ping_events_alone_do_not_keep_a_stream_alive() -> None:
    seen: list[CallStats] = []
    first = frames("msg_text.sse")[:2]
    ping = b'event: ping\ndata: {"type": "ping"}\n\n'
    stream = Stream(first, tail=ping, tail_gap=0.01)
    model = client(Script(sse(stream)), "messages", idle_timeout=0.15, on_stats=seen.append)
    last = error(await run(model))
    assert last.code == "stream_idle_timeout"
    assert seen[0].keepalives > 3


async def test_abort_mid_stream_closes_the_response() -> None:
    stream = Stream(frames("cc_plain_text.sse")[:2], hang=True)
    model = client(Script(sse(stream)))
    chunks: list[ModelStreamChunk] = []
    with anyio.fail_after(HANG):
        with anyio.CancelScope() as scope:
            async with aclosing(model.stream(REQUEST)) as items:
                async for chunk in items:
                    chunks.append(chunk)
                    if isinstance(chunk, TextDeltaChunk):
                        scope.cancel()
    assert scope.cancelled_caught
    assert stream.closed
    assert not any(isinstance(c, ErrorChunk) for c in chunks)
    assert model.last_stats is not None and model.last_stats.outcome == "aborted"


async def test_abort_while_the_read_waits_closes_the_response() -> None:
    stream = Stream(frames("cc_plain_text.sse")[:2], hang=True)
    model = client(Script(sse(stream)))
    chunks: list[ModelStreamChunk] = []

    async def consume() -> None:
        async with aclosing(model.stream(REQUEST)) as items:
            async for chunk in items:
                chunks.append(chunk)

    with anyio.fail_after(HANG):
        async with anyio.create_task_group() as tg:
            tg.start_soon(consume)
            await stream.hanging.wait()
            tg.cancel_scope.cancel()
    assert stream.closed
    assert text(chunks) == "Hello"
    assert not any(isinstance(c, ErrorChunk) for c in chunks)
