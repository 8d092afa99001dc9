"""Clean-up over HTTP, as ``kun rm``, ``kun trash``, ``kun restore``,
``kun gc`` and ``kun reconcile`` do it: each route one call of
:class:`~kun.app.local.LocalKun`.

``DELETE /v1/threads/{id}`` moves the thread to the trash (nothing in the
trash is ever deleted by kun); ``GET /v1/trash`` lists it, newest first;
``POST /v1/trash/{entry}/restore`` brings one back (``entry``: a name the
trash lists, or a thread id for its latest removal; 201). ``POST
/v1/threads/{id}/gc`` writes a new generation of the log without what
rewinds hid (``confirm``: removes the old ones a gc kept). A thread a turn
runs in, or another process writes, is 409 ``thread_locked``. Paths in the
answers are relative to the home, which a client is never shown.

``GET /v1/providers`` (beside them, for want of a better home) lists the
providers the server's turns can run on, for a session's ``/model``.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from kun.server.bodies import Collect, NoBody, RestoreThread, read_body
from kun.server.threads import json_response, kun_of

__all__ = ["cleanup_routes"]


async def trash_thread(request: Request) -> Response:
    await read_body(request, NoBody)
    return json_response(await kun_of(request).trash_thread(request.path_params["thread_id"]))


async def trash(request: Request) -> Response:
    return json_response(await kun_of(request).trash())


async def restore(request: Request) -> Response:
    body = await read_body(request, RestoreThread)
    restored = await kun_of(request).restore_thread(request.path_params["entry"], as_id=body.as_id)
    return json_response(restored, 201)


async def collect(request: Request) -> Response:
    body = await read_body(request, Collect)
    collected = await kun_of(request).collect(
        request.path_params["thread_id"], confirm=body.confirm
    )
    return json_response(collected)


async def reconcile(request: Request) -> Response:
    """Settle the turns a process that died left running (the server does
    it once when it starts; this is for a home others write too)."""
    await read_body(request, NoBody)
    return json_response(await kun_of(request).reconcile())


async def providers(request: Request) -> Response:
    return json_response(await kun_of(request).providers())


def cleanup_routes() -> list[BaseRoute]:
    return [
        Route("/v1/threads/{thread_id}", trash_thread, methods=["DELETE"]),
        Route("/v1/trash", trash, methods=["GET"]),
        Route("/v1/trash/{entry}/restore", restore, methods=["POST"]),
        Route("/v1/threads/{thread_id}/gc", collect, methods=["POST"]),
        Route("/v1/reconcile", reconcile, methods=["POST"]),
        Route("/v1/providers", providers, methods=["GET"]),
    ]
