"""An SSE response that never lets a slow client hold anything but its own
connection.

Two tasks and a bounded queue between them:

- the *producer* runs a source (a thread's follower, the firehose) and puts
  its frames on a queue of at most :attr:`StreamSettings.queue_bytes` (one
  piece is always let in, however big); a source puts the events it has
  ready as one piece, so a burst costs one wake and one put, not one each;
- the *sender* takes what is queued (as many frames as fit in one
  ``chunk_bytes`` write) and sends it; when nothing comes for
  :attr:`StreamSettings.heartbeat` seconds it sends a heartbeat comment.

A client that stops reading stalls only the sender (uvicorn's ``send``
waits while the socket is full). The queue then fills and the producer
waits for room; if none comes for :attr:`StreamSettings.lag_timeout`
seconds the subscriber has *fallen behind*: the producer stops, the sender
delivers what is already queued and a closing comment naming the last id
sent, then ends the response, so the client resumes from there with
``Last-Event-ID``. Memory per subscriber is the queue plus uvicorn's write
buffer; the writer is never involved (the bus's followers have their own
bounded buffers and go back to the log when they overflow).

A set shutdown event stops the producer the same way, with a comment saying
the server is shutting down. The last frames and the closing comment get
:attr:`StreamSettings.drain_timeout` seconds (plus ``lag_timeout`` after a
normal end); past that the response is abandoned and uvicorn closes the
connection. A client disconnect cancels everything at once.

Why not sse-starlette's ``EventSourceResponse``: its framing is what
:mod:`kun.server.sse_frames` does in a few lines, its pings are periodic
rather than idle-only, and on import it patches uvicorn's exit handler and
watches a process-global flag, where this server has its own shutdown
event; the lag rule above would still have to be built on top.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import anyio
from starlette.types import Receive, Scope, Send

from kun.server.sse_frames import HEARTBEAT, comment, retry_frame

__all__ = ["SSE_HEADERS", "EventStreamResponse", "FellBehind", "Put", "Source", "StreamSettings"]

_log = logging.getLogger(__name__)

Frame = tuple[int | None, bytes]
Put = Callable[[int | None, bytes], Awaitable[None]]
"""``put(seq, frame)``: queue one frame (``seq`` None for frames with no id)."""
Source = Callable[[Put], Awaitable[None]]
"""Produces frames through ``put`` until it returns (the stream ends) or
raises :class:`FellBehind`."""

SSE_HEADERS = [
    (b"content-type", b"text/event-stream; charset=utf-8"),
    (b"cache-control", b"no-store"),
    (b"x-accel-buffering", b"no"),
]


@dataclass(frozen=True, kw_only=True)
class StreamSettings:
    """Tuning of every SSE stream of a server (see the module docstring)."""

    heartbeat: float = 15.0
    """Seconds without a frame before a heartbeat comment is sent."""
    retry_ms: int = 2000
    """The reconnection delay sent to clients at the start of a stream."""
    queue_bytes: int = 1024 * 1024
    """Bytes of frames a subscriber may have waiting for its socket."""
    lag_timeout: float = 10.0
    """Seconds the queue may stay full before the subscriber is dropped."""
    drain_timeout: float = 5.0
    """Seconds for the last frames and the closing comment once a stream ends."""
    firehose_buffer: int = 4096
    """Live events the firehose holds for one subscriber before it is dropped."""
    chunk_bytes: int = 64 * 1024
    """Frames are sent in writes of up to this size."""


class FellBehind(Exception):
    """Raised by a source, or by ``put``, when the subscriber cannot keep up."""


class EventStreamResponse:
    """An ASGI response streaming the frames of ``source``.

    ``first_id`` is the last id the client had (the resume point), so the
    closing comment can name it when no event was sent; ``note`` makes the
    closing comment from the reason and the last id sent.
    """

    def __init__(
        self,
        source: Source,
        settings: StreamSettings,
        *,
        shutdown: anyio.Event | None,
        first_id: int | None,
        note: Callable[[str, int | None], str],
    ) -> None:
        self._source = source
        self._settings = settings
        self._shutdown = shutdown
        self._note = note
        self.last_id = first_id
        self.ending: str | None = None
        """Why the producer stopped early: ``fell behind``, ``shutdown`` or
        ``error: ...``; ``None`` for a normal end (or not ended yet)."""
        self._producing = anyio.CancelScope()
        self._sending = anyio.CancelScope()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        outbox = _Outbox(self._settings.queue_bytes, self._settings.lag_timeout)
        await send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})
        await send(_body(retry_frame(self._settings.retry_ms)))
        async with anyio.create_task_group() as tg:
            tg.start_soon(_until_disconnect, receive, tg.cancel_scope)
            tg.start_soon(self._produce, outbox)
            if self._shutdown is not None:
                tg.start_soon(self._stop_on, self._shutdown)
            await self._deliver(outbox, send)
            tg.cancel_scope.cancel()

    async def _produce(self, outbox: _Outbox) -> None:
        async def put(seq: int | None, frame: bytes) -> None:
            if not await outbox.put((seq, frame)):
                raise FellBehind

        with self._producing:
            try:
                await self._source(put)
            except FellBehind:
                self.ending = "fell behind"
            except Exception as exc:
                _log.exception("SSE stream failed")
                self.ending = f"error: {exc}"
        if self._producing.cancelled_caught:
            self.ending = "shutdown"
        outbox.close()
        settings = self._settings
        grace = settings.drain_timeout + (0.0 if self.ending else settings.lag_timeout)
        self._sending.deadline = anyio.current_time() + grace

    async def _stop_on(self, shutdown: anyio.Event) -> None:
        await shutdown.wait()
        self._producing.cancel()

    async def _deliver(self, outbox: _Outbox, send: Send) -> None:
        """Send what is queued, heartbeats while idle, and the end."""
        settings = self._settings
        with self._sending:
            while True:
                batch: list[Frame] | None = []
                with anyio.move_on_after(settings.heartbeat):
                    batch = await outbox.take(settings.chunk_bytes)
                if batch is None:
                    break
                if not batch:
                    await send(_body(HEARTBEAT))
                    continue
                await send(_body(b"".join(frame for _, frame in batch)))
                last = [seq for seq, _ in batch if seq is not None]
                if last:
                    self.last_id = last[-1]
            closing = b"" if self.ending is None else comment(self._note(self.ending, self.last_id))
            await send({"type": "http.response.body", "body": closing, "more_body": False})
        if self._sending.cancelled_caught:
            _log.info("SSE stream abandoned: its last frames could not be sent in time")


class _Outbox:
    """Frames waiting for the socket, at most ``limit`` bytes of them (but
    always room for one). The producer and the sender wait on ``_changed``
    (made by the first waiter, set and dropped at the next put, take or
    close) and re-check their condition; nobody waiting costs nothing. A
    put that finds no room for ``patience`` seconds gives up."""

    def __init__(self, limit: int, patience: float) -> None:
        self._patience = patience
        self._frames: deque[Frame] = deque()
        self._bytes = 0
        self._limit = limit
        self._closed = False
        self._changed: anyio.Event | None = None

    def _notify(self) -> None:
        changed, self._changed = self._changed, None
        if changed is not None:
            changed.set()

    async def _wait(self) -> None:
        if self._changed is None:
            self._changed = anyio.Event()
        await self._changed.wait()

    async def put(self, frame: Frame) -> bool:
        """Queue ``frame``, waiting up to ``patience`` seconds for room;
        ``False`` if none came."""
        size = len(frame[1])
        if self._frames and self._bytes + size > self._limit:
            with anyio.move_on_after(self._patience):
                while self._frames and self._bytes + size > self._limit:
                    await self._wait()
            if self._frames and self._bytes + size > self._limit:
                return False
        self._frames.append(frame)
        self._bytes += size
        self._notify()
        return True

    async def take(self, most: int) -> list[Frame] | None:
        """The queued frames up to ``most`` bytes (at least one), waiting
        for one; ``None`` once closed and empty."""
        frames = self._frames
        while not frames:
            if self._closed:
                return None
            await self._wait()
        batch = [frames.popleft()]
        size = len(batch[0][1])
        while frames and size + len(frames[0][1]) <= most:
            frame = frames.popleft()
            batch.append(frame)
            size += len(frame[1])
        self._bytes -= size
        self._notify()
        return batch

    def close(self) -> None:
        self._closed = True
        self._notify()


def _body(data: bytes) -> dict[str, object]:
    return {"type": "http.response.body", "body": data, "more_body": True}


async def _until_disconnect(receive: Receive, scope: anyio.CancelScope) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            scope.cancel()
            return
