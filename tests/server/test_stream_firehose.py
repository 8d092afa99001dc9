"""The firehose: every thread's live events, with their thread id, and a
subscriber that falls behind is dropped rather than held."""

from __future__ import annotations

import threading
from collections.abc import Callable

import anyio
import msgspec
import pytest

from kun.contracts import events as ev
from kun.contracts.threads import ThreadSettings
from kun.runtime.bus import EventBus
from kun.server.sse_response import FellBehind
from kun.server.stream import follow_all
from tests.server.test_stream import Message, Served, client, messages, served

__all__ = ["served"]


def warning(seq: int, thread_id: str = "thr_a") -> ev.WarningEvent:
    return ev.WarningEvent(seq=seq, at=seq, thread_id=thread_id, code="c", message=str(seq))


def test_firehose_carries_every_thread_live(served: Callable[..., Served]) -> None:
    s = served()
    other = s.portal.call(s.h.service.create_thread, ThreadSettings(workspace=str(s.h.workspace)))
    before = {t: len(s.log(t)) for t in (s.thread_id, other)}
    got: list[Message] = []
    wrote = threading.Event()
    with client() as c, c.stream("GET", s.url + "/v1/events") as response:
        assert response.status_code == 200
        for message in messages(response.iter_lines()):
            got.append(message)
            if message.comments == ["live"]:
                s.warn(3)
                s.warn(2, thread_id=other)
                s.warn(1)
                wrote.set()
            if wrote.is_set() and sum("data" in m.fields for m in got) == 6:
                break
    assert all("id" not in m.fields for m in got)
    seen: dict[str, list[bytes]] = {}
    for m in got:
        if "data" in m.fields:
            event = msgspec.json.decode(m.fields["data"], type=ev.Event)
            assert m.fields["event"] == "warning"
            seen.setdefault(event.thread_id, []).append(m.fields["data"].encode())
    assert seen == {t: s.log(t)[before[t] :] for t in (s.thread_id, other)}


def test_shutdown_ends_the_firehose(served: Callable[..., Served]) -> None:
    s = served()
    with client() as c, c.stream("GET", s.url + "/v1/events") as response:
        got: list[Message] = []
        for message in messages(response.iter_lines()):
            got.append(message)
            if message.comments == ["live"]:
                s.shutdown()
    assert got[-1].comments == ["the server is shutting down"]


@pytest.mark.anyio
async def test_a_firehose_subscriber_that_falls_behind_is_dropped() -> None:
    """More than ``capacity`` events waiting: the queued ones are sent, then
    the stream ends (there is no log to go back to); previews (seq 0) are
    not streamed; the tap is removed."""
    bus = EventBus()
    sent: list[bytes] = []

    async def put(seq: int | None, frame: bytes) -> None:
        assert seq is None
        sent.append(frame)
        if len(sent) == 1:  # ": live": the tap is in place
            bus.publish(warning(0))
            for seq in range(1, 21):
                bus.publish(warning(seq))

    with pytest.raises(FellBehind), anyio.fail_after(5):
        await follow_all(bus.tap, 4, put)
    assert sent[0] == b": live\n\n"
    frames = b"".join(sent[1:]).split(b"\n\n")[:-1]
    assert [frame.split(b'"seq":')[1].split(b",")[0] for frame in frames] == [
        b"1",
        b"2",
        b"3",
        b"4",
    ]
    before = len(sent)
    bus.publish(warning(21))
    assert len(sent) == before


def test_a_tap_sees_durable_events_of_every_thread_until_removed() -> None:
    bus = EventBus()
    seen: list[tuple[str, int]] = []
    untap = bus.tap(lambda e: seen.append((e.thread_id, e.seq)))
    bus.publish(warning(1, "thr_a"))
    bus.publish(warning(1, "thr_b"))
    untap()
    untap()
    bus.publish(warning(2, "thr_a"))
    assert seen == [("thr_a", 1), ("thr_b", 1)]
