"""The SSE routes: one thread's events (``GET /v1/threads/{id}/events``) and
every thread's live events (``GET /v1/events``).

A thread's stream is the adapter's feed (:meth:`LocalKun.follow
<kun.app.local.LocalKun.follow>`, the bus's follower): the backlog from the log,
then live, with no gap and no duplicate, so ``id:`` (the seq) is a resume
point that loses nothing: ``Last-Event-ID`` (or ``?after=``; the header wins,
since a browser reconnecting repeats the URL it started with) sends exactly
the events after it, including those appended while the client was away.
``?until=N`` ends the stream once seq N is sent; a request that is already
past it gets ``204`` (which tells an ``EventSource`` to stop reconnecting).

``?live=1`` adds previews: streamed text not yet in the log (the log merges
an item's fragments for up to a second; previews come every few tens of
milliseconds), as ``event: preview`` with no ``id:`` and ``seq`` 0. A
durable delta's text is exactly the previews of its stream (item) since the
previous durable delta of that stream, or none were sent: per stream, count
the characters previewed and not yet durable, and skip that many (at most
its length) of each durable delta (:class:`kun.runtime.bus.LiveText`).

The firehose has no backlog and no ids: seqs are per thread, and a single
``Last-Event-ID`` could not say where each thread was. It opens with a
``: live`` comment: every event published after it is in the stream. Each
event's data names its ``thread_id`` and ``seq``; a client that loses the
connection (or is dropped for falling behind) follows the firehose again,
then catches up each thread it cares about with that thread's stream and
``?after=<its last seq seen>&until=<the first seq the new firehose gave>``.

The app provides ``app.state.kun`` (the :class:`~kun.app.local.LocalKun`),
``app.state.service`` (its :class:`TurnService`, for the firehose) and, for a
clean shutdown, ``app.state.shutdown`` (an ``anyio.Event``; once set, every
open stream ends with a closing comment). A stream asked for while the
server stops is a 200 event stream that only sets ``retry:`` and says why
in a comment, then ends: a 503 would tell a browser's ``EventSource`` to
give up for good, where this makes it reconnect to the restarted server,
with its ``Last-Event-ID``.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable
from pathlib import Path

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp

from kun.app.local import LocalKun
from kun.contracts.events import Event
from kun.runtime.service import TurnService
from kun.server.errors import home_relative
from kun.server.sse_frames import comment, event_frame, preview_frame, retry_frame
from kun.server.sse_response import (
    SSE_HEADERS,
    EventStreamResponse,
    FellBehind,
    Put,
    StreamSettings,
)
from kun.store.errors import InvalidThreadId, ThreadNotFound
from kun.store.paths import validate_thread_id

__all__ = ["StreamSettings", "follow_all", "stream_routes"]

_SEQ = re.compile(r"[0-9]{1,18}")
_THREAD_PARAMS = frozenset({"after", "until", "live"})
_BATCH = 64
"""Events of a stream queued for its socket as one piece, at most."""
_FLAGS = {"1": True, "true": True, "0": False, "false": False}


class BadRequest(Exception):
    def __init__(self, field: str, message: str) -> None:
        self.field = field
        self.message = message
        super().__init__(message)


def stream_routes(settings: StreamSettings | None = None) -> list[BaseRoute]:
    """The two SSE routes, tuned by ``settings`` (heartbeat interval, queue
    and lag limits; defaults: :class:`StreamSettings`)."""
    tuned = settings or StreamSettings()

    async def thread_events(request: Request) -> Response | ASGIApp:
        return await _thread_events(request, tuned)

    async def firehose(request: Request) -> Response | ASGIApp:
        return _firehose(request, tuned)

    return [
        Route("/v1/threads/{thread_id:path}/events", thread_events, methods=["GET"]),
        Route("/v1/events", firehose, methods=["GET"]),
    ]


def _error(status: int, code: str, message: str, field: str | None = None) -> JSONResponse:
    error: dict[str, str] = {"code": code, "message": message}
    if field is not None:
        error["field"] = field
    return JSONResponse({"error": error}, status_code=status)


def _come_back(settings: StreamSettings, why: str) -> Response:
    """An event stream that ends at once, asking to be reconnected in
    ``retry_ms``."""
    return Response(
        retry_frame(settings.retry_ms) + comment(why),
        headers=dict((k.decode(), v.decode()) for k, v in SSE_HEADERS),
    )


def _home(service: TurnService) -> Path | None:
    """Where the service's store keeps its threads, to leave out of what
    a client is told (:func:`~kun.server.errors.home_relative`)."""
    home = getattr(service.recorder.store, "home", None)
    return home if isinstance(home, Path) else None


def _shutdown(request: Request) -> anyio.Event | None:
    shutdown: anyio.Event | None = getattr(request.app.state, "shutdown", None)
    return shutdown


async def _thread_events(request: Request, settings: StreamSettings) -> Response | ASGIApp:
    kun: LocalKun = request.app.state.kun
    try:
        validate_thread_id(request.path_params["thread_id"])
        after, after_field, until = _resume_point(request)
        live = _flag(request, "live")
    except InvalidThreadId as exc:
        return _error(400, "invalid_id", str(exc), "thread_id")
    except BadRequest as exc:
        return _error(400, "invalid_parameter", exc.message, exc.field)
    try:
        thread_id = kun.thread_id(request.path_params["thread_id"])
    except ThreadNotFound as exc:
        return _error(404, "thread_not_found", f"no thread {exc.thread_id!r}", "thread_id")
    shutdown = _shutdown(request)
    if shutdown is not None and shutdown.is_set():
        return _come_back(
            settings, f"the server is shutting down; resume with Last-Event-ID: {after}"
        )
    if after:
        # Every id a client saw was in the log first: one past the end was
        # never sent by this thread (another server's, or a lost tail).
        last = await kun.recorder.store.last_seq(thread_id)
        if after > last:
            message = f"{after_field} {after} is past the end of the thread (seq {last})"
            return _error(400, "invalid_parameter", message, after_field)
    if until is not None and after >= until:
        return Response(status_code=204)
    if request.method == "HEAD":
        return Response(headers={"content-type": "text/event-stream; charset=utf-8"})

    async def source(put: Put) -> None:
        async with kun.follow(thread_id, after=after, previews=live) as feed:
            while batch := await feed.batch(_BATCH):
                seq, frames = _frames(batch, until)
                await put(seq, frames)
                if until is not None and seq is not None and seq >= until:
                    return

    def note(reason: str, last: int | None) -> str:
        why = "the server is shutting down" if reason == "shutdown" else reason
        return f"{home_relative(why, kun.home)}; resume with Last-Event-ID: {last}"

    return EventStreamResponse(source, settings, shutdown=shutdown, first_id=after, note=note)


def _frames(batch: list[Event], until: int | None) -> tuple[int | None, bytes]:
    """The events' frames as one piece, up to seq ``until``, and the last
    seq among them (``None`` if they are all previews)."""
    last: int | None = None
    frames: list[bytes] = []
    for event in batch:
        if not event.seq:
            frames.append(preview_frame(event))
            continue
        frames.append(event_frame(event))
        last = event.seq
        if until is not None and last >= until:
            break
    return last, b"".join(frames)


def _resume_point(request: Request) -> tuple[int, str, int | None]:
    """``after`` (``Last-Event-ID``, else ``?after=``, else 0), the name of
    where it came from, and ``until``."""
    query = request.query_params
    unknown = sorted(set(query) - _THREAD_PARAMS)
    if unknown:
        raise BadRequest(unknown[0], f"unknown parameter {unknown[0]!r}")
    header = request.headers.get("last-event-id", "").strip()
    if header:
        field, after = "Last-Event-ID", _seq("Last-Event-ID", header)
    else:
        field, after = "after", _seq("after", query["after"]) if "after" in query else 0
    until = _seq("until", query["until"]) if "until" in query else None
    return after, field, until


def _flag(request: Request, name: str) -> bool:
    text = request.query_params.get(name, "0")
    flag = _FLAGS.get(text.lower())
    if flag is None:
        raise BadRequest(name, f"{name} must be 1 or 0, not {text!r}")
    return flag


def _seq(field: str, text: str) -> int:
    if _SEQ.fullmatch(text) is None:
        raise BadRequest(field, f"{field} must be a seq (a non-negative integer), not {text!r}")
    return int(text)


def _firehose(request: Request, settings: StreamSettings) -> Response | ASGIApp:
    service: TurnService = request.app.state.service
    if request.query_params:
        name = sorted(request.query_params)[0]
        return _error(400, "invalid_parameter", f"unknown parameter {name!r}", name)
    shutdown = _shutdown(request)
    if shutdown is not None and shutdown.is_set():
        return _come_back(settings, "the server is shutting down")
    if request.method == "HEAD":
        return Response(headers={"content-type": "text/event-stream; charset=utf-8"})
    tap = service.recorder.bus.tap

    async def source(put: Put) -> None:
        await follow_all(tap, settings.firehose_buffer, put)

    def note(reason: str, last: int | None) -> str:
        if reason == "shutdown":
            return "the server is shutting down"
        why = home_relative(reason, _home(service))
        return f"{why}; events may be missing: catch each thread up with ?after=<its last seq>"

    return EventStreamResponse(source, settings, shutdown=shutdown, first_id=None, note=note)


async def follow_all(
    tap: Callable[[Callable[[Event], None]], Callable[[], None]], capacity: int, put: Put
) -> None:
    """Every durable event of every thread from now on, until more than
    ``capacity`` wait unsent (then :class:`FellBehind`: there is no log to
    go back to across threads)."""
    queue: deque[Event] = deque()
    overflowed = False
    wake = anyio.Event()

    def sink(event: Event) -> None:
        nonlocal overflowed
        if event.seq <= 0 or overflowed:
            return
        if len(queue) >= capacity:
            overflowed = True
        else:
            queue.append(event)
        wake.set()

    untap = tap(sink)
    try:
        await put(None, comment("live"))
        while True:
            while queue:
                most = min(len(queue), _BATCH)
                frames = [event_frame(queue.popleft(), with_id=False) for _ in range(most)]
                await put(None, b"".join(frames))
            if overflowed:
                raise FellBehind
            await wake.wait()
            wake = anyio.Event()
    finally:
        untap()
