"""An SSE response that never lets a slow client hold anything but its own
connection.

Two tasks and a bounded queue between them:

- the *producer* runs a source (a thread's follower, the firehose) and puts
  each frame on a queue of :attr:`StreamSettings.queue` frames;
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
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from starlette.types import Receive, Scope, Send

from kun.server.sse_frames import HEARTBEAT, comment, retry_frame

__all__ = ["EventStreamResponse", "FellBehind", "Put", "Source", "StreamSettings"]

_log = logging.getLogger(__name__)

Frame = tuple[int | None, bytes]
Put = Callable[[int | None, bytes], Awaitable[None]]
"""``put(seq, frame)``: queue one frame (``seq`` None for frames with no id)."""
Source = Callable[[Put], Awaitable[None]]
"""Produces frames through ``put`` until it returns (the stream ends) or
raises :class:`FellBehind`."""

_HEADERS = [
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
    queue: int = 256
    """Frames a subscriber may have waiting for its socket."""
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
        settings = self._settings
        tx, rx = anyio.create_memory_object_stream[Frame](settings.queue)
        await send({"type": "http.response.start", "status": 200, "headers": _HEADERS})
        await send(_body(retry_frame(settings.retry_ms)))
        with rx:
            async with anyio.create_task_group() as tg:
                tg.start_soon(_until_disconnect, receive, tg.cancel_scope)
                tg.start_soon(self._produce, tx)
                if self._shutdown is not None:
                    tg.start_soon(self._stop_on, self._shutdown)
                await self._deliver(rx, send)
                tg.cancel_scope.cancel()

    async def _produce(self, tx: MemoryObjectSendStream[Frame]) -> None:
        lag = self._settings.lag_timeout

        async def put(seq: int | None, frame: bytes) -> None:
            try:
                tx.send_nowait((seq, frame))
                return
            except anyio.WouldBlock:
                pass
            with anyio.move_on_after(lag):
                await tx.send((seq, frame))
                return
            raise FellBehind

        async with tx:
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
            grace = self._settings.drain_timeout + (0.0 if self.ending else lag)
            self._sending.deadline = anyio.current_time() + grace

    async def _stop_on(self, shutdown: anyio.Event) -> None:
        await shutdown.wait()
        self._producing.cancel()

    async def _deliver(self, rx: MemoryObjectReceiveStream[Frame], send: Send) -> None:
        """Send what is queued, heartbeats while idle, and the end."""
        settings = self._settings
        with self._sending:
            while True:
                frames: list[bytes] = []
                size = 0
                last = self.last_id
                with anyio.move_on_after(settings.heartbeat):
                    try:
                        seq, frame = await rx.receive()
                    except anyio.EndOfStream:
                        break
                    frames.append(frame)
                    size = len(frame)
                    last = seq if seq is not None else last
                if not frames:
                    await send(_body(HEARTBEAT))
                    continue
                while size < settings.chunk_bytes:
                    try:
                        seq, frame = rx.receive_nowait()
                    except (anyio.WouldBlock, anyio.EndOfStream):
                        break
                    frames.append(frame)
                    size += len(frame)
                    last = seq if seq is not None else last
                await send(_body(b"".join(frames)))
                self.last_id = last
            closing = b"" if self.ending is None else comment(self._note(self.ending, self.last_id))
            await send({"type": "http.response.body", "body": closing, "more_body": False})
        if self._sending.cancelled_caught:
            _log.info("SSE stream abandoned: its last frames could not be sent in time")


def _body(data: bytes) -> dict[str, object]:
    return {"type": "http.response.body", "body": data, "more_body": True}


async def _until_disconnect(receive: Receive, scope: anyio.CancelScope) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            scope.cancel()
            return
