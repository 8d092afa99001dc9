"""``follow``: a thread's events, typed, resumed from the last seq seen when
the connection drops (byte-exact streams through ``httpx.MockTransport``)."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest

from kun.client import AsyncKunClient, KunClient, NotFound, Retry, StreamLost
from kun.contracts.events import AssistantTextDelta
from tests.client.wire import Cut, delta, preview

NO_WAIT = Retry(reconnects=3, first_delay=0.0)
SSE = {"content-type": "text/event-stream"}
Handler = Callable[[httpx.Request], httpx.Response]


def _cut_then_whole(seen: list[httpx.Request]) -> Handler:
    """The first connection sends a preview, seqs 1 and 2 and half of 3,
    then resets; the second sends 3 and 4 whole and ends."""

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if len(seen) == 1:
            third = delta(3, "c")
            body = Cut(preview("a"), delta(1, "a"), delta(2, "b") + third[:40])
            return httpx.Response(200, headers=SSE, stream=body)
        if len(seen) == 2:
            return httpx.Response(200, headers=SSE, stream=Cut(delta(3, "c"), delta(4, "d")))
        return httpx.Response(200, headers=SSE, stream=Cut(cut=False))

    return handle


@pytest.mark.anyio
async def test_a_stream_cut_mid_frame_is_resumed_from_the_last_seq() -> None:
    seen: list[httpx.Request] = []
    transport = httpx.MockTransport(_cut_then_whole(seen))
    async with AsyncKunClient("http://kun", transport=transport, retry=NO_WAIT) as kun:
        async with kun.follow("thr_a", previews=True) as feed:
            got = []
            async for event in feed:
                got.append(event)
                if event.seq == 4:
                    break
    assert all(isinstance(event, AssistantTextDelta) for event in got)
    assert [(event.seq, event.text) for event in got] == [  # type: ignore[attr-defined]
        (0, "a"),
        (1, "a"),
        (2, "b"),
        (3, "c"),
        (4, "d"),
    ]
    first, resumed = seen[0], seen[1]
    assert first.url.path == "/v1/threads/thr_a/events"
    assert first.url.params["live"] == "1" and "last-event-id" not in first.headers
    assert resumed.headers["last-event-id"] == "2"
    assert "live" not in resumed.url.params  # previews sent while away are lost
    assert feed.seen == 4


def test_the_sync_feed_resumes_alike() -> None:
    seen: list[httpx.Request] = []
    with KunClient("http://kun", transport=httpx.MockTransport(_cut_then_whole(seen)),
                   retry=NO_WAIT) as kun:  # fmt: skip
        with kun.follow("thr_a", after=0) as feed:
            seqs = []
            for event in feed:
                seqs.append(event.seq)
                if event.seq == 4:
                    break
    assert seqs == [0, 1, 2, 3, 4]
    assert seen[1].headers["last-event-id"] == "2"


@pytest.mark.anyio
async def test_following_after_a_seq_asks_from_it() -> None:
    seen: list[httpx.Request] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, headers=SSE, stream=Cut(delta(8, "x"), cut=False))

    async with AsyncKunClient("http://kun", transport=httpx.MockTransport(handle)) as kun:
        async with kun.follow("thr_a", after=7) as feed:
            async for event in feed:
                assert event.seq == 8
                break
    assert seen[0].headers["last-event-id"] == "7"


@pytest.mark.anyio
async def test_a_stream_that_keeps_dropping_is_a_typed_error_at_the_last_seq() -> None:
    calls: list[int] = []

    def handle(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        if len(calls) == 1:
            return httpx.Response(200, headers=SSE, stream=Cut(delta(1, "a")))
        raise httpx.ConnectError("connection refused")

    async with AsyncKunClient("http://kun", transport=httpx.MockTransport(handle),
                              retry=NO_WAIT) as kun:  # fmt: skip
        async with kun.follow("thr_a") as feed:
            got = []
            with pytest.raises(StreamLost) as lost:
                async for event in feed:
                    got.append(event.seq)
    assert got == [1]
    assert lost.value.seq == 1
    assert str(lost.value) == ("lost the event stream of thread thr_a at seq 1: connection refused")
    assert len(calls) == 1 + NO_WAIT.reconnects  # the first connection, then each attempt


@pytest.mark.anyio
async def test_a_refused_stream_is_refused_on_entering() -> None:
    def handle(request: httpx.Request) -> httpx.Response:
        error = {"code": "thread_not_found", "message": "no thread 'thr_x'", "field": "thread_id"}
        return httpx.Response(404, json={"error": error})

    async with AsyncKunClient("http://kun", transport=httpx.MockTransport(handle)) as kun:
        with pytest.raises(NotFound) as missing:
            async with kun.follow("thr_x"):
                pass
    assert str(missing.value) == "no thread 'thr_x'"
    assert missing.value.field == "thread_id"


@pytest.mark.anyio
async def test_a_stream_already_past_its_end_has_no_events() -> None:
    def handle(request: httpx.Request) -> httpx.Response:
        return httpx.Response(204)

    async with AsyncKunClient("http://kun", transport=httpx.MockTransport(handle)) as kun:
        async with kun.follow("thr_a") as feed:
            assert [event async for event in feed] == []
