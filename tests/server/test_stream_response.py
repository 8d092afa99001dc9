"""EventStreamResponse on its own, with a fake ASGI send: batching, the
closing comment after an error, and an end that cannot be delivered."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from kun.server.sse_response import EventStreamResponse, Put, Source, StreamSettings

pytestmark = pytest.mark.anyio


def frame(seq: int, size: int = 100) -> bytes:
    return b"id: %d\ndata: %s\n\n" % (seq, b"x" * size)


async def never_disconnect() -> dict[str, Any]:
    await anyio.sleep_forever()
    raise AssertionError


def note(reason: str, last: int | None) -> str:
    return f"{reason} after {last}"


async def run(
    source: Source, settings: StreamSettings, send: Callable[[dict[str, Any]], Any]
) -> EventStreamResponse:
    response = EventStreamResponse(source, settings, shutdown=None, first_id=0, note=note)
    with anyio.fail_after(10):
        await response({}, never_disconnect, send)
    return response


async def test_frames_go_out_in_order_in_writes_of_at_most_chunk_bytes() -> None:
    bodies: list[bytes] = []

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body":
            bodies.append(message["body"])
            await anyio.lowlevel.checkpoint()

    async def source(put: Put) -> None:
        for seq in range(1, 201):
            await put(seq, frame(seq))

    response = await run(source, StreamSettings(chunk_bytes=1000, queue_bytes=4000), send)
    events = bodies[1:-1]
    assert b"".join(events) == b"".join(frame(seq) for seq in range(1, 201))
    assert all(len(body) <= 1000 for body in events)
    assert len(events) < 200
    assert bodies[-1] == b""
    assert response.last_id == 200


async def test_an_error_in_the_source_ends_the_stream_with_a_comment() -> None:
    bodies: list[bytes] = []

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body":
            bodies.append(message["body"])

    async def source(put: Put) -> None:
        await put(1, frame(1))
        await put(2, frame(2))
        raise RuntimeError("the log went away")

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("kun.server.sse_response._log.exception", lambda *a, **k: None)
        await run(source, StreamSettings(), send)
    assert bodies[-1] == b": error: the log went away after 2\n\n"


async def test_an_end_that_cannot_be_sent_is_abandoned_after_drain_timeout() -> None:
    """The socket never takes another byte: once the source ends, the last
    frames get lag + drain seconds, then the response gives up."""
    sent: list[bytes] = []

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body" and message["body"].startswith(b"id:"):
            await anyio.sleep_forever()
        sent.append(message.get("body", b""))

    async def source(put: Put) -> None:
        await put(1, frame(1))

    settings = StreamSettings(lag_timeout=0.05, drain_timeout=0.05)
    response = await run(source, settings, send)
    assert response.last_id == 0
    assert sent == [b"", b"retry: 2000\n\n"]
