"""``GET /openapi.json``: the API described from the very Structs that
decode its bodies (:mod:`kun.server.bodies`, through
``msgspec.json.schema_components``), so the schema cannot drift from
what the server accepts. :data:`OPERATIONS` lists every route; a test
checks it against the app's routes.
"""

from __future__ import annotations

from typing import Any

import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from kun.server import bodies

__all__ = ["OPERATIONS", "openapi_routes", "spec"]

# (method, path, summary, request body, success status)
OPERATIONS: tuple[tuple[str, str, str, type[Any] | None, int], ...] = (
    ("POST", "/v1/threads", "Create a thread", bodies.CreateThread, 201),
    ("GET", "/v1/threads", "List threads, newest activity first (limit, cursor, all)", None, 200),
    ("GET", "/v1/threads/{thread_id}", "The thread's projection", None, 200),
    ("PATCH", "/v1/threads/{thread_id}", "Change the thread's settings", bodies.UpdateThread, 200),
    ("POST", "/v1/threads/{thread_id}/turns", "Start a turn (runs in the background)",
     bodies.StartTurn, 202),
    ("GET", "/v1/threads/{thread_id}/turns/{turn_id}", "One turn", None, 200),
    ("POST", "/v1/threads/{thread_id}/turns/{turn_id}/steer", "Steer the running turn",
     bodies.Steer, 202),
    ("POST", "/v1/threads/{thread_id}/turns/{turn_id}/interrupt", "Interrupt the running turn",
     bodies.Interrupt, 200),
    ("POST", "/v1/threads/{thread_id}/rewind", "Hide a turn and every later one", bodies.Rewind,
     200),
    ("POST", "/v1/threads/{thread_id}/rewind/undo", "Undo the latest rewind", None, 200),
    ("POST", "/v1/threads/{thread_id}/fork", "Fork the thread", bodies.Fork, 201),
    ("POST", "/v1/threads/{thread_id}/compact",
     "Compact the history now, as its own short turn (200 and turn_id null: nothing to "
     "summarise yet)", None, 202),
    ("POST", "/v1/approvals/{approval_id}", "Answer an approval", bodies.AnswerApproval, 200),
    ("POST", "/v1/user-inputs/{request_id}", "Answer a question", bodies.AnswerUserInput, 200),
    ("GET", "/v1/threads/{thread_id}/usage", "The thread's usage (kun usage)", None, 200),
    ("GET", "/v1/usage", "Usage of two threads side by side (?thread=A&thread=B)", None, 200),
    ("GET", "/v1/threads/{thread_id}/transcript", "The transcript (kun replay)", None, 200),
    ("GET", "/v1/threads/{thread_id}/log", "The raw log (JSON lines)", None, 200),
    ("GET", "/v1/threads/{thread_id}/export",
     "The thread's bundle, streamed (kun export; ?compress=false: a plain tar)", None, 200),
    ("POST", "/v1/threads/import",
     "Import the body: a bundle, or ?from=codex|claude-code a session (kun import; ?as=ID, "
     "?name=FILE); 201 added, 200 already there", None, 201),
    ("GET", "/v1/threads/{thread_id}/events", "The thread's events as Server-Sent Events",
     None, 200),
    ("GET", "/v1/events", "Every thread's live events as Server-Sent Events", None, 200),
    ("GET", "/openapi.json", "This document", None, 200),
)  # fmt: skip

_ERROR = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {
                "code": {"type": "string"},
                "message": {"type": "string"},
                "field": {"type": "string"},
            },
        }
    },
}


def spec() -> dict[str, Any]:
    kinds = [kind for *_, kind, _ in OPERATIONS if kind is not None]
    refs, components = msgspec.json.schema_components(
        kinds, ref_template="#/components/schemas/{name}"
    )
    ref_of = dict(zip(kinds, refs, strict=True))
    components["Error"] = _ERROR
    paths: dict[str, dict[str, Any]] = {}
    for method, path, summary, kind, status in OPERATIONS:
        operation: dict[str, Any] = {
            "summary": summary,
            "responses": {
                str(status): {"description": "OK"},
                "4XX": {
                    "description": "Refused; the error names the field or the reason",
                    "content": {
                        "application/json": {"schema": {"$ref": "#/components/schemas/Error"}}
                    },
                },
            },
        }
        if kind is not None:
            operation["requestBody"] = {
                "required": False,
                "content": {"application/json": {"schema": ref_of[kind]}},
            }
        parameters = [
            {"name": part[1:-1], "in": "path", "required": True, "schema": {"type": "string"}}
            for part in path.split("/")
            if part.startswith("{")
        ]
        if parameters:
            operation["parameters"] = parameters
        paths.setdefault(path, {})[method.lower()] = operation
    return {
        "openapi": "3.1.0",
        "info": {"title": "kun", "version": "1"},
        "components": {
            "schemas": components,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "paths": paths,
    }


async def openapi(request: Request) -> Response:
    return Response(msgspec.json.encode(spec()), media_type="application/json")


def openapi_routes() -> list[BaseRoute]:
    return [Route("/openapi.json", openapi, methods=["GET"])]
