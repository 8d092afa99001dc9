"""A request body as pieces: the JSON of one model call without one copy
of the whole history per step.

Every wire format puts the history last (``messages`` or ``input``), so a
body is its *head* — the other fields, a ``dict`` the client may still
change (drop ``stream_options``) — and the encoded items of that last list.
The codecs encode an item of the settled history once and hand the same
``bytes`` to every later step (:class:`EncodedItems`); the client sends the
pieces with an exact ``Content-Length`` (:meth:`RequestBody.stream`), so no
step builds the whole body in one buffer. A whole-body buffer per step is
what made resident memory grow with the log: glibc keeps the freed large
blocks, and httpx's request and response sit in a reference cycle, each
holding its body until the cyclic collector runs.

:meth:`RequestBody.join` is byte for byte what encoding the codec's ``dict``
gives (``msgspec`` writes a ``dict`` in insertion order, without spaces).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from typing import TYPE_CHECKING, Any

import msgspec

if TYPE_CHECKING:
    from kun.contracts.model import ModelRequest
    from kun.model.request_codec import RequestCodec

__all__ = ["CHUNK", "EncodedItems", "RequestBody", "encode_body", "encode_item"]

CHUNK = 64 * 1024
"""Small pieces are joined into writes of about this size."""

_ENCODER = msgspec.json.Encoder()


def encode_item(item: Any) -> bytes:
    """One wire item's JSON, as it is within the whole body."""
    return _ENCODER.encode(item)


class RequestBody:
    """``fields`` then ``key: [items...]`` as one JSON object; ``key`` is
    ``None`` for a body kept whole (``items`` then holds its one piece)."""

    __slots__ = ("fields", "items", "key")

    def __init__(self, fields: dict[str, Any], key: str | None, items: list[bytes]) -> None:
        self.fields = fields
        self.key = key
        self.items = items

    @classmethod
    def of(cls, payload: dict[str, Any]) -> RequestBody:
        """A body whose last field is a list of items, from its ``dict``."""
        *_, key = payload
        fields = dict(payload)
        items = fields.pop(key)
        return cls(fields, key, [_ENCODER.encode(item) for item in items])

    def _opening(self) -> bytes:
        """Everything before the first item (the whole body if kept whole)."""
        head = _ENCODER.encode(self.fields)
        if self.key is None:
            return head
        return (b"{" if head == b"{}" else head[:-1] + b",") + _ENCODER.encode(self.key) + b":["

    def pieces(self) -> Iterator[bytes]:
        yield self._opening()
        if self.key is None:
            return
        for n, item in enumerate(self.items):
            if n and len(item) < CHUNK:
                yield b"," + item
                continue
            if n:
                yield b","
            yield item
        yield b"]}"

    def chunks(self) -> Iterator[bytes]:
        """The pieces, small ones joined into writes of about :data:`CHUNK`."""
        pending = bytearray()
        for piece in self.pieces():
            if len(piece) >= CHUNK:
                if pending:
                    yield bytes(pending)
                    pending.clear()
                yield piece
                continue
            pending += piece
            if len(pending) >= CHUNK:
                yield bytes(pending)
                pending.clear()
        if pending:
            yield bytes(pending)

    def __len__(self) -> int:
        if self.key is None:
            return len(self._opening())
        commas = max(len(self.items) - 1, 0)
        return len(self._opening()) + sum(map(len, self.items)) + commas + 2

    def join(self) -> bytes:
        """The whole body (for the debug recorder and tests)."""
        return b"".join(self.pieces())

    async def stream(self) -> AsyncIterator[bytes]:
        """The body for httpx, one write per chunk (send it with
        ``Content-Length: len(body)``)."""
        for chunk in self.chunks():
            yield chunk


class EncodedItems:
    """The encoded wire items of each message of one history, kept from
    one request to the next.

    Keyed by the message object itself (the history projection hands every
    step the same objects for its settled messages): :meth:`get` is a hit
    only for that very object. What one request did not use is forgotten
    when the next one starts (:meth:`begin`), so a rewound or rebuilt
    history does not pile up.
    """

    __slots__ = ("_kept", "_used")

    def __init__(self) -> None:
        self._kept: dict[int, _Kept] = {}
        self._used: dict[int, _Kept] = {}

    def begin(self) -> None:
        if self._used:
            self._kept, self._used = self._used, {}

    def items(
        self, source: object, build: Callable[[], list[Any]], token: tuple[object, ...] = ()
    ) -> list[bytes]:
        """The encoded items of ``source``: kept ones, else ``build()``
        encoded (and kept). ``token`` is what else they depend on (equal
        tokens, equal items)."""
        key = id(source)
        hit = self._kept.get(key) or self._used.get(key)
        if hit is not None and hit[0] is source and hit[1] == token:
            self._used[key] = hit
            return hit[2]
        encoded = [encode_item(item) for item in build()]
        self._used[key] = (source, token, encoded)
        return encoded


_Kept = tuple[object, tuple[object, ...], list[bytes]]


def encode_body(codec: RequestCodec, request: ModelRequest, **fields: Any) -> RequestBody:
    """``codec``'s body for ``request`` as pieces; a codec that only gives a
    ``dict`` (``encode``) has it encoded whole."""
    pieces = getattr(codec, "encode_body", None)
    if pieces is not None:
        body: RequestBody = pieces(request, **fields)
        return body
    return RequestBody(codec.encode(request, **fields), None, [])
