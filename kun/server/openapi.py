"""``GET /openapi.json``: the API described from the very Structs that
decode its bodies (:mod:`kun.server.bodies`, through
``msgspec.json.schema_components``), so the schema cannot drift from
what the server accepts. :data:`OPERATIONS` lists every route; a test
checks it against the app's routes. :data:`QUERY` lists the query
parameters a route reads; the bodies that are files (an import) and the
answers that are (an export) are described as binary.
"""

from __future__ import annotations

from typing import Any

import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from kun.server import bodies

__all__ = ["OPERATIONS", "QUERY", "openapi_routes", "spec"]

# (method, path, summary, request body, success status)
OPERATIONS: tuple[tuple[str, str, str, type[Any] | None, int], ...] = (
    ("POST", "/v1/threads", "Create a thread", bodies.CreateThread, 201),
    ("GET", "/v1/threads", "List threads, newest first (limit, cursor, all, q)", None, 200),
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
    ("POST", "/v1/threads/{thread_id}/rewind/undo", "Undo the latest rewind", bodies.NoBody, 200),
    ("POST", "/v1/threads/{thread_id}/fork", "Fork the thread", bodies.Fork, 201),
    ("POST", "/v1/threads/{thread_id}/compact",
     "Compact the history now, as its own short turn (200 and turn_id null: nothing to "
     "summarise yet)", bodies.NoBody, 202),
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


def _q(name: str, schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {
        "name": name,
        "in": "query",
        "required": False,
        "schema": schema,
        "description": description,
    }


_BOOL = {"type": "boolean", "default": False}
_SEQ = {"type": "integer", "minimum": 0}

# The query parameters each route reads (the handlers' docstrings say why).
QUERY: dict[tuple[str, str], tuple[dict[str, Any], ...]] = {
    ("GET", "/v1/threads"): (
        _q("limit", {"type": "integer", "minimum": 1, "maximum": 500, "default": 50},
           "Threads per page"),
        _q("cursor", {"type": "string"}, "The next_cursor of the page before"),
        _q("all", _BOOL, "Include hidden side threads"),
        _q("q", {"type": "string"},
           "Only threads whose title, workspace or id contains it, ignoring case"),
    ),
    ("GET", "/v1/usage"): (
        _q("thread", {"type": "array", "items": {"type": "string"}, "minItems": 1,
                      "maxItems": 2}, "One thread, or two to compare"),
    ),
    ("GET", "/v1/threads/{thread_id}/transcript"): (
        _q("hidden", _BOOL, "Show turns hidden by a rewind"),
        _q("reasoning", _BOOL, "Show the model's reasoning"),
        _q("until_seq", _SEQ, "The thread as it was at this seq"),
    ),
    ("GET", "/v1/threads/{thread_id}/events"): (
        _q("after", _SEQ, "Resume after this seq (the Last-Event-ID header wins)"),
        _q("until", _SEQ, "Stop at this seq"),
        _q("live", {"type": "integer", "enum": [0, 1], "default": 0},
           "Also send previews not yet in the log"),
    ),
    ("GET", "/v1/threads/{thread_id}/export"): (
        _q("compress", {"type": "boolean", "default": True},
           "false: a plain tar rather than a gzip-compressed one"),
    ),
    ("POST", "/v1/threads/import"): (
        _q("from", {"type": "string", "enum": ["claude-code", "codex", "kun"], "default": "kun"},
           "What the body is: a kun bundle, or another tool's session"),
        _q("as", {"type": "string"}, "A bundle's thread id here (bundles only)"),
        _q("name", {"type": "string"}, "The uploaded file's name"),
    ),
}  # fmt: skip

# Routes whose body or answer is not JSON.
_BINARY_BODY: dict[tuple[str, str], dict[str, Any]] = {
    ("POST", "/v1/threads/import"): {
        "required": True,
        "content": {"application/octet-stream": {"schema": {"type": "string",
                                                             "format": "binary"}}},
    },
}  # fmt: skip
_BINARY_ANSWER: dict[tuple[str, str], dict[str, Any]] = {
    ("GET", "/v1/threads/{thread_id}/export"): {
        "application/gzip": {"schema": {"type": "string", "format": "binary"}},
        "application/x-tar": {"schema": {"type": "string", "format": "binary"}},
    },
}  # fmt: skip

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
        key = (method, path)
        if key in _BINARY_BODY:
            operation["requestBody"] = _BINARY_BODY[key]
        if key in _BINARY_ANSWER:
            operation["responses"][str(status)]["content"] = _BINARY_ANSWER[key]
        parameters = [
            {"name": part[1:-1], "in": "path", "required": True, "schema": {"type": "string"}}
            for part in path.split("/")
            if part.startswith("{")
        ]
        parameters.extend(QUERY.get(key, ()))
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
