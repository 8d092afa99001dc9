"""What the CLI prints about a thread, over HTTP: its usage (one thread,
or two side by side, the numbers and text of ``kun usage A B``), its
transcript (``kun replay``'s text) and its raw log.

Each is one call of :class:`~kun.app.local.LocalKun`, which reads the
thread's log file, as the CLI does, after writing what the recorder still
buffers, so it sees every event recorded before the request; the reads
run off the event loop (a long log takes a while to fold).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from kun.server.errors import ApiError
from kun.server.threads import json_response, kun_of, query_bool, query_int

__all__ = ["read_routes"]

CHUNK = 1 << 16


async def thread_usage(request: Request) -> Response:
    return json_response(await kun_of(request).usage(request.path_params["thread_id"]))


async def usage_diff(request: Request) -> Response:
    """``?thread=A&thread=B``: the two threads side by side (one alone is
    its usage)."""
    names = request.query_params.getlist("thread")
    if not 1 <= len(names) <= 2:
        raise ApiError(400, "invalid_query", "give one thread, or two to compare", "thread")
    return json_response(await kun_of(request).usage(*names))


async def transcript(request: Request) -> Response:
    """``kun replay``'s text: ``hidden``, ``reasoning`` and ``until_seq``
    as its flags."""
    text = await kun_of(request).transcript(
        request.path_params["thread_id"],
        hidden=query_bool(request, "hidden"),
        reasoning=query_bool(request, "reasoning"),
        until_seq=query_int(request, "until_seq"),
    )
    return Response(text + "\n", media_type="text/plain; charset=utf-8")


async def raw_log(request: Request) -> Response:
    """The log's bytes as they are on disk (JSON lines), up to its size
    when asked: a log that grows meanwhile is not read past that point.
    Streamed from the file (:meth:`LocalKun.log_file
    <kun.app.local.LocalKun.log_file>`), never held whole; a database's
    thread is read whole (:meth:`LocalKun.log <kun.app.local.LocalKun.log>`)."""
    kun = kun_of(request)
    if not kun.on_home:
        log = await kun.log(request.path_params["thread_id"])
        return Response(log, media_type="application/x-ndjson")
    _, path = await kun.log_file(request.path_params["thread_id"])
    size = (await anyio.Path(path).stat()).st_size
    return StreamingResponse(_chunks(path, size), media_type="application/x-ndjson")


async def _chunks(path: Path, size: int) -> AsyncIterator[bytes]:
    fd = await anyio.to_thread.run_sync(os.open, path, os.O_RDONLY)
    try:
        offset = 0
        while offset < size:
            chunk = await anyio.to_thread.run_sync(os.pread, fd, min(CHUNK, size - offset), offset)
            if not chunk:
                return
            offset += len(chunk)
            yield chunk
    finally:
        os.close(fd)


def read_routes() -> list[BaseRoute]:
    one = "/v1/threads/{thread_id}"
    return [
        Route(f"{one}/usage", thread_usage, methods=["GET"]),
        Route("/v1/usage", usage_diff, methods=["GET"]),
        Route(f"{one}/transcript", transcript, methods=["GET"]),
        Route(f"{one}/log", raw_log, methods=["GET"]),
    ]
