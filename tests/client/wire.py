"""Byte-exact event streams for the client's tests: frames as ``kun serve``
writes them, and bodies that are cut where a test says."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import httpx

__all__ = ["Cut", "delta", "preview"]


def delta(seq: int, text: str, thread: str = "thr_a") -> bytes:
    data = (
        b'{"kind":"assistant_text_delta","seq":%d,"at":1700000000000,"thread_id":"%s",'
        b'"turn_id":"trn_1","item_id":"itm_1","text":"%s"}'
    ) % (seq, thread.encode(), text.encode())
    return b"id: %d\nevent: assistant_text_delta\ndata: %s\n\n" % (seq, data)


def preview(text: str, thread: str = "thr_a") -> bytes:
    data = (
        b'{"kind":"assistant_text_delta","seq":0,"at":1700000000000,"thread_id":"%s",'
        b'"turn_id":"trn_1","item_id":"itm_1","text":"%s"}'
    ) % (thread.encode(), text.encode())
    return b"event: preview\ndata: %s\n\n" % data


class Cut(httpx.AsyncByteStream, httpx.SyncByteStream):
    """A body sent in ``parts``, then (``cut``) a reset connection."""

    def __init__(self, *parts: bytes, cut: bool = True) -> None:
        self.parts = parts
        self.cut = cut

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for part in self.parts:
            yield part
        if self.cut:
            raise httpx.ReadError("connection reset by peer")

    def __iter__(self) -> Iterator[bytes]:
        yield from self.parts
        if self.cut:
            raise httpx.ReadError("connection reset by peer")
