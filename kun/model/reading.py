"""Reading one response body: the idle deadline, progress, decode timing.

Split out of :mod:`kun.model.client`, which owns the HTTP call; this module
owns what happens between two reads of its body.

Idle timeout: a deadline, moved forward only by progress: the response
arriving, or a read that completes an SSE event other than a ``ping``.
Keep-alive comments, pings and the bytes of an unfinished frame do not move
it, so a connection that only says "still here" dies after the timeout
(:class:`~kun.model.errors.StreamIdleTimeout`), while a model that streams
slowly but steadily for longer than that lives. Each read runs under
``anyio.move_on_at(deadline)``, which cancels the read itself on expiry.

Decode timing: the wait for the server (the response, then every wait on
the next read) is kept apart from the time between reads (decoding, plus the
consumer's own handling of the chunks), as :class:`CallStats`.

Failures: an attempt's end in failure is a :class:`Failure` value, not an
exception, so the client can decide to resend before the caller sees
anything; :func:`screen` turns a decoder's final ``error`` chunk into one,
classified like an HTTP error body (:mod:`kun.model.classify`).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import datetime

import anyio
import httpx
import msgspec

from kun.contracts.model import ErrorChunk, ModelStreamChunk, UsageChunk, WireFormat
from kun.model.classify import classify_stream_error
from kun.model.errors import APIEmptyResponseError, ChatProviderError, StreamIdleTimeout
from kun.model.redact import summarize_body
from kun.model.retry import format_wait
from kun.model.sse import SSEParser
from kun.model.wire import StreamDecoder, new_decoder

__all__ = ["CallRecord", "CallStats", "Failure", "ResponseBody", "SSEReader", "screen"]

_HEAD = 1000


class CallStats(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """How one ``stream`` call went. Times are seconds.

    ``server_wait`` sums the waits for the server: sending and waiting for
    the response, then every wait on the next read; ``time_to_first_byte`` is
    the part up to the first body byte of the last attempt.
    ``client_consume`` sums the time between reads: decoding, plus whatever
    the consumer did with the chunks before asking for more. ``outcome`` is
    ``completed``, the code of the final error, or ``aborted``. Counters sum
    over every attempt.
    """

    attempts: int
    status: int | None
    outcome: str
    time_to_first_byte: float | None
    server_wait: float
    client_consume: float
    total: float
    bytes_received: int
    events: int
    comments: int
    keepalives: int
    skipped: int


class CallRecord:
    """Mutable scratch of one ``stream`` call, frozen into :class:`CallStats`
    when it ends."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.started = clock()
        self.sent = self.started
        self.attempts = 0
        self.free_resends = 0
        self.output = False
        self.status: int | None = None
        self.outcome = "aborted"
        self.first_byte: float | None = None
        self.server_wait = 0.0
        self.client_consume = 0.0
        self.bytes = 0
        self.events = self.comments = self.keepalives = self.skipped = 0

    def absorb(self, parser: SSEParser, decoder: StreamDecoder) -> None:
        """Add one attempt's parser and decoder counters."""
        self.events += parser.events
        self.comments += parser.comments
        self.keepalives += decoder.keepalives
        self.skipped += decoder.skipped

    def stats(self) -> CallStats:
        return CallStats(
            attempts=self.attempts,
            status=self.status,
            outcome=self.outcome,
            time_to_first_byte=self.first_byte,
            server_wait=self.server_wait,
            client_consume=self.client_consume,
            total=self.clock() - self.started,
            bytes_received=self.bytes,
            events=self.events,
            comments=self.comments,
            keepalives=self.keepalives,
            skipped=self.skipped,
        )


class Failure(msgspec.Struct, gc=False):
    """An attempt failed with ``error``; the client decides whether to resend.
    ``usage`` is a usage report that came with a failing stream."""

    error: ChatProviderError
    in_stream: bool = False
    usage: UsageChunk | None = None
    drop_stream_options: bool = False
    server_now: datetime | None = None


class ResponseBody:
    """One response body, read piece by piece under the idle deadline.

    ``edge`` translates the transport's exceptions (the client's, so they are
    translated in one place); ``head`` keeps the first bytes for messages;
    ``tap`` is given every piece read (the debug recorder).
    """

    def __init__(
        self,
        response: httpx.Response,
        idle: float,
        record: CallRecord,
        edge: Callable[[], AbstractContextManager[None]],
        *,
        tap: Callable[[bytes], None] | None = None,
    ) -> None:
        self._pieces = response.aiter_bytes()
        self._tap = tap
        self._idle = idle
        self._record = record
        self._edge = edge
        self._deadline = anyio.current_time() + idle
        self._returned: float | None = None
        self.size = 0
        self.head = b""

    def progressed(self) -> None:
        """Progress was made: the idle deadline starts again from now."""
        self._deadline = anyio.current_time() + self._idle

    async def next(self) -> bytes | None:
        """The next piece, or ``None`` at the end. Raises
        :class:`StreamIdleTimeout` when the deadline passes first."""
        record = self._record
        started = record.clock()
        if self._returned is not None:
            record.client_consume += started - self._returned
        with anyio.move_on_at(self._deadline), self._edge():
            piece = await anext(self._pieces, None)
            self._returned = now = record.clock()
            record.server_wait += now - started
            if piece:
                if record.first_byte is None:
                    record.first_byte = now - record.sent
                self.size += len(piece)
                record.bytes += len(piece)
                if self._tap is not None:
                    self._tap(piece)
                if len(self.head) < _HEAD:
                    self.head += piece[: _HEAD - len(self.head)]
            return piece
        raise StreamIdleTimeout(
            f"the provider sent no data for {format_wait(self._idle)} (keep-alives do not "
            "count); the stream was closed"
        )

    async def read_all(self, limit: int | None = None) -> bytes:
        """The rest of the body; with ``limit``, its first ``limit`` bytes (the
        rest is still drained, so the connection can be reused). Every piece
        counts as progress."""
        parts: list[bytes] = []
        kept = 0
        while (piece := await self.next()) is not None:
            self.progressed()
            if limit is None or kept < limit:
                parts.append(piece)
                kept += len(piece)
        data = b"".join(parts)
        return data if limit is None else data[:limit]


class SSEReader:
    """Bytes -> events -> chunks for one event-stream response."""

    def __init__(self, body: ResponseBody, format: WireFormat) -> None:
        self.body = body
        self.parser = SSEParser()
        self.decoder = new_decoder(format)

    async def batch(self) -> list[ModelStreamChunk] | None:
        """The chunks of the next read (possibly none); ``None`` once the
        response has ended. A 200 with no bytes at all is an
        :class:`APIEmptyResponseError`; bytes without a single event (an HTML
        page from a captive portal) are not an event stream."""
        parser, decoder = self.parser, self.decoder
        if decoder.ended:
            return None
        piece = await self.body.next()
        if piece is None:
            out = decoder.feed_all(parser.flush())
            if self.body.size == 0:
                raise APIEmptyResponseError("the provider answered 200 with an empty stream")
            if parser.events == 0:
                raise ChatProviderError(
                    f"the response is not an event stream: {summarize_body(self.body.head)}",
                    code="invalid_response",
                )
            return out + decoder.finish()
        events, pings = parser.events, decoder.keepalives
        out = decoder.feed_all(parser.feed(piece))
        if parser.events - events > decoder.keepalives - pings:
            self.body.progressed()
        return out


def screen(chunks: list[ModelStreamChunk]) -> list[ModelStreamChunk | Failure]:
    """Chunks as they are, except a final ``error`` chunk: it becomes a
    classified :class:`Failure`, holding the usage report that preceded it."""
    last = chunks[-1] if chunks else None
    if not isinstance(last, ErrorChunk):
        return list(chunks)
    rest: list[ModelStreamChunk | Failure] = list(chunks[:-1])
    usage = chunks[-2] if len(chunks) > 1 else None
    if isinstance(usage, UsageChunk):
        rest.pop()
    else:
        usage = None
    error = classify_stream_error(last.code, last.message)
    return [*rest, Failure(error, in_stream=True, usage=usage)]
