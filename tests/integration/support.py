"""A plain client for the fake provider: httpx streaming, kun's SSE parser
and a wire decoder, nothing else (the real client is tested elsewhere)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import httpx

from kun.contracts.model import ModelStreamChunk, WireFormat
from kun.model.sse import SSEParser
from kun.model.wire import materialize, new_decoder

PATHS: dict[WireFormat, str] = {
    "chat_completions": "chat/completions",
    "responses": "responses",
    "messages": "messages",
}


@dataclass
class Received:
    """What the client saw: status, headers, every read, decoded chunks."""

    status: int
    headers: httpx.Headers
    reads: list[bytes] = field(default_factory=list)
    chunks: list[ModelStreamChunk] = field(default_factory=list)
    comments: int = 0
    body: bytes = b""
    broken: str | None = None

    @property
    def boundaries(self) -> set[int]:
        """Byte offsets where one read ended and the next began."""
        out, position = set(), 0
        for piece in self.reads[:-1]:
            position += len(piece)
            out.add(position)
        return out


async def call(
    base_url: str,
    format: WireFormat,
    *,
    body: Any = None,
    headers: dict[str, str] | None = None,
    path: str | None = None,
) -> Received:
    """POST one streaming request and decode the answer as a client would:
    SSE through the parser and decoder, JSON materialized, errors kept raw.
    A connection dropped mid-body ends the stream (the decoder decides
    whether that was complete)."""
    request = body if body is not None else {"model": "fake-model", "stream": True}
    async with (
        httpx.AsyncClient(base_url=base_url, timeout=5) as client,
        client.stream("POST", path or PATHS[format], json=request, headers=headers) as response,
    ):
        got = Received(status=response.status_code, headers=response.headers)
        if response.status_code != 200:
            got.body = await response.aread()
            return got
        if response.headers["content-type"].startswith("application/json"):
            got.body = await response.aread()
            got.chunks = materialize(format, got.body)
            return got
        parser, decoder = SSEParser(), new_decoder(format)
        try:
            async for piece in response.aiter_raw():
                got.reads.append(piece)
                got.chunks += decoder.feed_all(parser.feed(piece))
        except httpx.RemoteProtocolError as exc:
            got.broken = str(exc)
        got.chunks += decoder.feed_all(parser.flush())
        got.chunks += decoder.finish()
        got.comments = parser.comments
        got.body = b"".join(got.reads)
        return got
