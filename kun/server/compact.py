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

from kun.app.answers import CompactionStarted
from kun.observe.propagation import caller_trace
from kun.runtime.compact_turn import NOTHING_TO_COMPACT
from kun.server.bodies import NoBody, read_body
from kun.server.threads import backend_of, json_response

__all__ = ["compact_routes"]


async def compact(request: Request) -> Response:
    backend = backend_of(request)
    await read_body(request, NoBody)
    state = await backend.state(request.path_params["thread_id"])
    thread_id = state.thread_id
    with caller_trace(request.headers):
        turn_id = await backend.service.start_compaction(
            thread_id, model=backend.model_for(state.settings)
        )
    if turn_id is None:
        return json_response(
            CompactionStarted(thread_id=thread_id, turn_id=None, reason=NOTHING_TO_COMPACT)
        )
    return json_response(CompactionStarted(thread_id=thread_id, turn_id=turn_id), 202)


def compact_routes() -> list[BaseRoute]:
    return [Route("/v1/threads/{thread_id}/compact", compact, methods=["POST"])]
