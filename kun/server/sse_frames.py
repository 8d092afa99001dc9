"""Server-Sent Events framing of kun's events (the WHATWG ``text/event-stream``
format), as bytes ready for the socket.

An event is three fields and a blank line::

    id: 42
    event: assistant_text_delta
    data: {"kind":"assistant_text_delta","seq":42,...}

``data`` is the event exactly as the log encodes it (one msgspec JSON value,
``thread_id`` included). JSON never holds a raw CR or LF (they are escaped
inside strings), so one ``data:`` line always carries the whole event and no
escaping is needed; that is why this is a few lines rather than a dependency.
A comment (a line starting with ``:``) is ignored by clients: heartbeats and
the closing notes are comments.
"""

from __future__ import annotations

import threading

from kun.contracts.events import EVENT_TYPES, Event, EventBase
from kun.store.codec import ENCODER

__all__ = ["HEARTBEAT", "comment", "event_frame", "kind_of", "preview_frame", "retry_frame"]

HEARTBEAT = b": heartbeat\n\n"

_KINDS: dict[type[EventBase], bytes] = {
    t: str(t.__struct_config__.tag).encode() for t in EVENT_TYPES
}


def kind_of(event: Event) -> bytes:
    return _KINDS[type(event)]


def event_frame(event: Event, *, with_id: bool = True) -> bytes:
    """The event as one SSE message; ``id:`` is its seq unless ``with_id`` is
    false (the firehose: seqs of different threads are not one sequence)."""
    data = _data(event)
    if with_id:
        return b"id: %d\nevent: %s\ndata: %s\n\n" % (event.seq, _KINDS[type(event)], data)
    return b"event: %s\ndata: %s\n\n" % (_KINDS[type(event)], data)


def preview_frame(delta: Event) -> bytes:
    """A preview (a delta not yet in the log, ``seq`` 0) as ``event:
    preview`` with no ``id:``: it is no resume point."""
    return b"event: preview\ndata: %s\n\n" % _data(delta)


class _EncodedOnce:
    """The JSON of recently framed events, so an event published to many
    subscribers is encoded once: the bus hands each of them the same
    (frozen) object. Keyed by identity, holding the event so its id is not
    reused while cached; at most ``entries`` events and ``size`` bytes of
    JSON, the oldest dropped first (a dict keeps insertion order). A hit
    is one dict lookup; a miss takes a lock, for servers run in threads."""

    __slots__ = ("_bytes", "_cache", "_entries", "_lock", "_size")

    def __init__(self, entries: int, size: int) -> None:
        self._cache: dict[int, tuple[Event, bytes]] = {}
        self._entries = entries
        self._size = size
        self._bytes = 0
        self._lock = threading.Lock()

    def __call__(self, event: Event) -> bytes:
        cached = self._cache.get(id(event))
        if cached is not None:
            return cached[1]
        data = ENCODER.encode(event)
        if len(data) > self._size // 4:
            return data
        with self._lock:
            cache = self._cache
            while cache and (len(cache) >= self._entries or self._bytes + len(data) > self._size):
                self._bytes -= len(cache.pop(next(iter(cache)))[1])
            if id(event) not in cache:
                cache[id(event)] = (event, data)
                self._bytes += len(data)
        return data


_data = _EncodedOnce(entries=2048, size=4 * 1024 * 1024)


def comment(text: str) -> bytes:
    """A comment message; line breaks in ``text`` become spaces so it stays
    one comment."""
    flat = " ".join(text.splitlines())
    return b": %s\n\n" % flat.encode()


def retry_frame(milliseconds: int) -> bytes:
    """Sets the client's reconnection delay; dispatches no event."""
    return b"retry: %d\n\n" % milliseconds
