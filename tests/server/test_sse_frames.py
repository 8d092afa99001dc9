"""SSE framing: an event published to many subscribers is encoded once,
and the frames stay exactly what the log's encoding gives."""

from __future__ import annotations

import pytest

from kun.contracts import events as ev
from kun.server import sse_frames
from kun.server.sse_frames import event_frame, preview_frame
from kun.store.codec import ENCODER


def warning(seq: int, message: str = "m") -> ev.WarningEvent:
    return ev.WarningEvent(seq=seq, at=1, thread_id="thr_f", code="c", message=message)


class CountingEncoder:
    def __init__(self) -> None:
        self.calls = 0

    def encode(self, event: ev.Event) -> bytes:
        self.calls += 1
        return ENCODER.encode(event)


def test_the_same_event_framed_for_many_subscribers_is_encoded_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    counting = CountingEncoder()
    monkeypatch.setattr(sse_frames, "ENCODER", counting)
    monkeypatch.setattr(sse_frames, "_data", sse_frames._EncodedOnce(entries=8, size=1 << 20))
    published = warning(7)
    frames = {event_frame(published) for _ in range(4)}
    assert frames == {b"id: 7\nevent: warning\ndata: %s\n\n" % ENCODER.encode(published)}
    assert event_frame(published, with_id=False) == (
        b"event: warning\ndata: %s\n\n" % ENCODER.encode(published)
    )
    assert counting.calls == 1
    assert event_frame(warning(7)) == frames.pop()  # an equal event, another object
    assert counting.calls == 2


def test_the_cache_is_bounded_and_never_confuses_events(monkeypatch: pytest.MonkeyPatch) -> None:
    cache = sse_frames._EncodedOnce(entries=4, size=400)
    monkeypatch.setattr(sse_frames, "_data", cache)
    for seq in range(1, 200):
        event = warning(seq, "x" * (seq % 50))
        assert event_frame(event) == b"id: %d\nevent: warning\ndata: %s\n\n" % (
            seq,
            ENCODER.encode(event),
        )
        assert len(cache._cache) <= 4
        assert cache._bytes <= 400
    big = warning(1, "y" * 1000)
    assert preview_frame(big) == b"event: preview\ndata: %s\n\n" % ENCODER.encode(big)
    assert all(len(data) <= 400 for _, data in cache._cache.values())
