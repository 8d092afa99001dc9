"""``POST /v1/threads/{id}/compact``: summarise the thread's history now,
as ``/compact`` does in the terminal session.

The compaction runs as its own short turn in the background
(:mod:`kun.runtime.compact_turn`): 202 with its ``turn_id``, followed like
any turn (``GET …/turns/{turn_id}``, the event stream, ``…/interrupt``).
With nothing to summarise yet, no turn is recorded and the answer is 200
with ``turn_id`` null and the reason; while a turn runs, 409
``thread_busy``.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from kun.observe.propagation import caller_trace
from kun.server.bodies import NoBody, read_body
from kun.server.threads import json_response, kun_of

__all__ = ["compact_routes"]


async def compact(request: Request) -> Response:
    await read_body(request, NoBody)
    with caller_trace(request.headers):
        started = await kun_of(request).compact(request.path_params["thread_id"])
    return json_response(started, 200 if started.turn_id is None else 202)


def compact_routes() -> list[BaseRoute]:
    return [Route("/v1/threads/{thread_id}/compact", compact, methods=["POST"])]
