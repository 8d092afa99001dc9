"""What the CLI prints about a thread, over HTTP: its usage (one thread,
or two side by side, the numbers and text of ``kun usage A B``), its
transcript (``kun replay``'s text) and its raw log.

Each reads the thread's log file, as the CLI does, after writing what the
recorder still buffers, so it sees every event recorded before the request;
the reads run off the event loop (a long log takes a while to fold).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from kun.app.answers import ThreadUsage, UsageReport
from kun.contracts.usage import UsageTotals
from kun.domain.transcript import render_transcript
from kun.domain.usage_report import render_usage
from kun.server.backend import Backend
from kun.server.errors import ApiError
from kun.server.threads import backend_of, json_response, query_bool, query_int
from kun.store.paths import log_path
from kun.store.replay import replay_log
from kun.store.usage_totals import skipped_lines, usage_of_log

__all__ = ["read_routes"]

CHUNK = 1 << 16


async def _log_of(backend: Backend, text: str) -> tuple[str, Path]:
    thread_id = backend.thread_id(text)
    await backend.service.recorder.flush(thread_id)
    return thread_id, log_path(backend.home, thread_id)


def usage_report(logs: list[tuple[str, Path]]) -> UsageReport:
    """``kun usage --json``'s document for one or two logs, plus ``text``:
    the table ``kun usage`` prints."""
    totals: list[UsageTotals] = []
    labels: list[str] = []
    shown: list[ThreadUsage] = []
    for name, (thread_id, path) in zip("AB", logs, strict=False):
        total, report = usage_of_log(path)
        totals.append(total)
        labels.append(f"{name}: {thread_id}" if len(logs) == 2 else thread_id)
        priced = not (total.calls and total.unpriced_calls == total.calls)
        shown.append(
            ThreadUsage(
                thread_id=thread_id,
                usage=total,
                cost_usd=total.cost_usd if priced else None,
                skipped_lines=skipped_lines(report),
            )
        )
    return UsageReport(threads=shown, text="\n".join(render_usage(labels, totals)))


async def thread_usage(request: Request) -> Response:
    log = await _log_of(backend_of(request), request.path_params["thread_id"])
    return json_response(await anyio.to_thread.run_sync(usage_report, [log]))


async def usage_diff(request: Request) -> Response:
    """``?thread=A&thread=B``: the two threads side by side (one alone is
    its usage)."""
    names = request.query_params.getlist("thread")
    if not 1 <= len(names) <= 2:
        raise ApiError(400, "invalid_query", "give one thread, or two to compare", "thread")
    backend = backend_of(request)
    logs = [await _log_of(backend, name) for name in names]
    return json_response(await anyio.to_thread.run_sync(usage_report, logs))


async def transcript(request: Request) -> Response:
    """``kun replay``'s text: ``hidden``, ``reasoning`` and ``until_seq``
    as its flags."""
    hidden = query_bool(request, "hidden")
    reasoning = query_bool(request, "reasoning")
    until = query_int(request, "until_seq")
    _, path = await _log_of(backend_of(request), request.path_params["thread_id"])

    def draw() -> str:
        state = replay_log(path, until=until, mode="tolerant")
        return "\n".join(render_transcript(state, show_hidden=hidden, show_reasoning=reasoning))

    text = await anyio.to_thread.run_sync(draw)
    return Response(text + "\n", media_type="text/plain; charset=utf-8")


async def raw_log(request: Request) -> Response:
    """The log's bytes as they are on disk (JSON lines), up to its size
    when asked: a log that grows meanwhile is not read past that point."""
    _, path = await _log_of(backend_of(request), request.path_params["thread_id"])
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
