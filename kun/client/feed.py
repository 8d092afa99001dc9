"""Following a thread's events over ``GET /v1/threads/{id}/events``, resumed
on its own when the connection drops.

Entering the feed opens the stream, so every event appended after that is
in it (open it before starting a turn and nothing is missed). Each SSE
message's ``data`` is decoded with the log's codec into a typed
:class:`~kun.contracts.events.Event` (a preview: ``seq`` 0; a kind this kun
does not know is skipped, as a tolerant replay skips it). A dropped
connection, a stream the server ended, or one silent for
:data:`READ_TIMEOUT` (the server sends a heartbeat every 15 seconds) is
resumed with ``Last-Event-ID`` = the last seq delivered, which the server
answers with exactly the events after it: none twice, none lost. After
:attr:`Retry.reconnects` failures in a row the feed raises
:class:`~kun.client.errors.StreamLost`.

A resumed stream asks for no previews: those sent while away are lost, so
later ones would not be a prefix of their durable delta
(:class:`kun.runtime.bus.LiveText`); the durable deltas carry the text.
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, AsyncIterator, Generator, Iterator
from contextlib import (
    AbstractAsyncContextManager,
    AbstractContextManager,
    AsyncExitStack,
    ExitStack,
    aclosing,
    closing,
)
from dataclasses import dataclass
from typing import Any

import anyio
import httpx

from kun.client.errors import StreamLost, refusal
from kun.client.routes import EVENTS
from kun.contracts.events import Event
from kun.model.sse import SSEEvent, SSEParser

__all__ = ["READ_TIMEOUT", "AsyncFeed", "Feed", "Position", "Retry"]

READ_TIMEOUT = 60.0
"""Seconds without a byte before the stream is taken for dead and resumed."""


@dataclass(frozen=True)
class Retry:
    """How a dropped stream is resumed: up to ``reconnects`` attempts in a
    row, waiting ``first_delay`` doubled each time, at most ``max_delay``."""

    reconnects: int = 5
    first_delay: float = 0.1
    max_delay: float = 2.0

    def delay(self, failures: int) -> float:
        return float(min(self.first_delay * 2 ** (failures - 1), self.max_delay))


class Position:
    """Where the feed is: the request for the next connection, and the
    events of a connection's bytes (the seq seen moves with them)."""

    def __init__(self, base_url: str, thread: str, after: int, previews: bool) -> None:
        self.url = base_url
        self.thread = thread
        self.seen = after
        self.previews = previews
        self.path = EVENTS.call(thread).path

    def request(self, resumed: bool) -> dict[str, Any]:
        headers = {"Last-Event-ID": str(self.seen)} if self.seen else {}
        params = {"live": "1"} if self.previews and not resumed else {}
        timeout = httpx.Timeout(10.0, read=READ_TIMEOUT)
        return {"headers": headers, "params": params, "timeout": timeout}

    def events(self, parser: SSEParser, chunk: bytes) -> Iterator[Event]:
        for message in parser.feed(chunk):
            event = _decoded(message)
            if event is None:
                continue
            if event.seq:
                self.seen = max(self.seen, event.seq)
            yield event

    def lost(self, reason: str) -> StreamLost:
        return StreamLost(self.thread, self.seen, reason)


def _decoded(message: SSEEvent) -> Event | None:
    from kun.store.codec import LineError, decode_line

    try:
        return decode_line(message.raw)
    except LineError:
        return None


class AsyncFeed:
    """One thread's events (``async for event in feed``), resumed as the
    module says. Made by :meth:`kun.client.AsyncKunClient.follow`."""

    def __init__(
        self, http: httpx.AsyncClient, position: Position, retry: Retry, stack: AsyncExitStack
    ) -> None:
        self._http = http
        self._at = position
        self._retry = retry
        self._stack = stack
        self._first: httpx.Response | None = None
        self._ended = False

    @property
    def seen(self) -> int:
        """The last durable seq delivered (resume after it)."""
        return self._at.seen

    def ended(self) -> bool:
        """The server said the stream has no more events (204)."""
        return self._ended

    async def open(self) -> None:
        """Subscribe: the first connection, held until the feed is left."""
        response = await self._stack.enter_async_context(self._request(resumed=False))
        if await self._accepted(response):
            self._first = response

    def _request(self, resumed: bool) -> AbstractAsyncContextManager[httpx.Response]:
        return self._http.stream("GET", self._at.path, **self._at.request(resumed))

    async def _accepted(self, response: httpx.Response) -> bool:
        """Whether the stream has events to read (204: none, ever)."""
        if response.status_code == 204:
            self._ended = True
            return False
        if response.status_code != 200:
            await response.aread()
            raise refusal(response)
        return True

    def __aiter__(self) -> AsyncIterator[Event]:
        events = self._resumed()
        self._stack.push_async_callback(events.aclose)
        return events

    async def _resumed(self) -> AsyncGenerator[Event, None]:
        first, self._first = self._first, None
        failures = 0
        while not self.ended():
            try:
                async with aclosing(self._connection(first)) as events:
                    async for event in events:
                        failures = 0
                        yield event
                reason = "the server ended the stream"
            except httpx.TransportError as exc:
                reason = str(exc) or type(exc).__name__
            first = None
            failures += 1
            if self.ended():
                return
            if failures > self._retry.reconnects:
                raise self._at.lost(reason)
            await anyio.sleep(self._retry.delay(failures))

    async def _connection(self, first: httpx.Response | None) -> AsyncGenerator[Event, None]:
        """One connection's events: the one :meth:`open` made, or a new one."""
        if first is not None:
            async for event in self._read(first):
                yield event
            return
        async with self._request(resumed=True) as response:
            if await self._accepted(response):
                async for event in self._read(response):
                    yield event

    async def _read(self, response: httpx.Response) -> AsyncGenerator[Event, None]:
        parser = SSEParser()
        async for chunk in response.aiter_bytes():
            for event in self._at.events(parser, chunk):
                yield event


class Feed:
    """:class:`AsyncFeed`, blocking (``for event in feed``). Made by
    :meth:`kun.client.KunClient.follow`."""

    def __init__(
        self, http: httpx.Client, position: Position, retry: Retry, stack: ExitStack
    ) -> None:
        self._http = http
        self._at = position
        self._retry = retry
        self._stack = stack
        self._first: httpx.Response | None = None
        self._ended = False

    @property
    def seen(self) -> int:
        return self._at.seen

    def ended(self) -> bool:
        return self._ended

    def open(self) -> None:
        response = self._stack.enter_context(self._request(resumed=False))
        if self._accepted(response):
            self._first = response

    def _request(self, resumed: bool) -> AbstractContextManager[httpx.Response]:
        return self._http.stream("GET", self._at.path, **self._at.request(resumed))

    def _accepted(self, response: httpx.Response) -> bool:
        if response.status_code == 204:
            self._ended = True
            return False
        if response.status_code != 200:
            response.read()
            raise refusal(response)
        return True

    def __iter__(self) -> Iterator[Event]:
        events = self._resumed()
        self._stack.callback(events.close)
        return events

    def _resumed(self) -> Generator[Event, None, None]:
        first, self._first = self._first, None
        failures = 0
        while not self.ended():
            try:
                with closing(self._connection(first)) as events:
                    for event in events:
                        failures = 0
                        yield event
                reason = "the server ended the stream"
            except httpx.TransportError as exc:
                reason = str(exc) or type(exc).__name__
            first = None
            failures += 1
            if self.ended():
                return
            if failures > self._retry.reconnects:
                raise self._at.lost(reason)
            time.sleep(self._retry.delay(failures))

    def _connection(self, first: httpx.Response | None) -> Generator[Event, None, None]:
        if first is not None:
            yield from self._read(first)
            return
        with self._request(resumed=True) as response:
            if self._accepted(response):
                yield from self._read(response)

    def _read(self, response: httpx.Response) -> Iterator[Event]:
        parser = SSEParser()
        for chunk in response.iter_bytes():
            yield from self._at.events(parser, chunk)
