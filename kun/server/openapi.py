"""``GET /openapi.json``: the API described from the very Structs that
decode its bodies (:mod:`kun.server.bodies`, through
``msgspec.json.schema_components``), so the schema cannot drift from
what the server accepts. :data:`OPERATIONS` lists every route; a test
checks it against the app's routes. :data:`QUERY` lists the query
parameters a route reads; the bodies that are files (an import) and the
answers that are (an export) are described as binary.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from kun.app import answers
from kun.domain.state import ThreadState, TurnState
from kun.server import bodies
from kun.server.web import send_page

__all__ = ["OPERATIONS", "QUERY", "Operation", "openapi_routes", "spec"]

_BINARY = {"type": "string", "format": "binary"}


class Operation(NamedTuple):
    """A route: its request body's Struct (``None``: no body) and its
    success answers, by status: a Struct (JSON), or media types and
    their schemas for what is not JSON."""

    method: str
    path: str
    summary: str
    body: type[Any] | None
    answers: dict[int, type[Any] | dict[str, dict[str, Any]]]


def _media(kind: str, schema: dict[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    return {kind: {"schema": schema or {"type": "string"}}}


_THREAD = "/v1/threads/{thread_id}"
_TURN = "/v1/threads/{thread_id}/turns/{turn_id}"
OPERATIONS: tuple[Operation, ...] = (
    Operation("POST", "/v1/threads", "Create a thread", bodies.CreateThread,
              {201: answers.ThreadOptions}),
    Operation("GET", "/v1/threads", "List threads, newest first (limit, cursor, all, q)", None,
              {200: answers.ThreadPage}),
    Operation("GET", _THREAD, "The thread's projection (kun replay --json)", None,
              {200: ThreadState}),
    Operation("PATCH", _THREAD, "Change the thread's settings", bodies.UpdateThread,
              {200: answers.ThreadOptions}),
    Operation("POST", f"{_THREAD}/turns", "Start a turn (runs in the background). While "
              "the thread's turn runs, multitask decides: reject (409 thread_busy), enqueue "
              "(202, status queued; 409 turns_queued past 1000 waiting), steer (the running "
              "turn takes the text; steered true), interrupt (the running turn is interrupted, "
              "then this one starts)", bodies.StartTurn, {202: answers.TurnStarted}),
    Operation("GET", _TURN, "One turn", None, {200: TurnState}),
    Operation("POST", f"{_TURN}/steer", "Steer the running turn", bodies.Steer,
              {202: answers.Steered}),
    Operation("POST", f"{_TURN}/interrupt", "Interrupt the running turn; the turn as the log "
              "then has it", bodies.Interrupt, {200: TurnState}),
    Operation("GET", f"{_TURN}/goal-resume", "Whether settling the turn scheduled a resume of "
              "the goal, and where it stands (waiting, started, dropped)", None,
              {200: answers.GoalResume}),
    Operation("POST", f"{_THREAD}/rewind", "Hide a turn and every later one", bodies.RewindThread,
              {200: answers.RewindDone}),
    Operation("POST", f"{_THREAD}/rewind/undo", "Undo the latest rewind", bodies.NoBody,
              {200: answers.RewindUndone}),
    Operation("POST", f"{_THREAD}/fork", "Fork the thread", bodies.Fork, {201: answers.Forked}),
    Operation("DELETE", _THREAD, "Move the thread to the trash (kun rm)", bodies.NoBody,
              {200: answers.Trashed}),
    Operation("PUT", f"{_THREAD}/goal", "Give the thread a goal, replacing any",
              bodies.SetGoal, {200: answers.GoalSet}),
    Operation("PATCH", f"{_THREAD}/goal",
              "Pause, resume or complete the goal, or change its budget (409 goal_refused: "
              "its status does not allow the move)", bodies.ChangeGoal, {200: answers.GoalSet}),
    Operation("DELETE", f"{_THREAD}/goal", "Drop the goal (409 no_goal: there is none)",
              bodies.NoBody, {200: answers.GoalSet}),
    Operation("POST", f"{_THREAD}/gc",
              "A new generation of the log without what rewinds hid (kun gc; confirm: remove "
              "the old generations kept)", bodies.Collect, {200: answers.Collected}),
    Operation("GET", "/v1/trash", "The threads in the trash, newest first (kun trash)", None,
              {200: answers.TrashPage}),
    Operation("POST", "/v1/trash/{entry}/restore",
              "Bring a thread back from the trash (entry: as the trash lists it, or a thread id)",
              bodies.RestoreThread, {201: answers.Restored}),
    Operation("POST", "/v1/reconcile", "Settle turns a process that died left running",
              bodies.NoBody, {200: answers.Reconciled}),
    Operation("GET", "/v1/providers", "The providers this server's turns can run on "
              "(kun.toml's, in its order)", None, {200: answers.Providers}),
    Operation("POST", f"{_THREAD}/compact",
              "Compact the history now, as its own short turn (200 and turn_id null: nothing to "
              "summarise yet)", bodies.NoBody,
              {202: answers.CompactionStarted, 200: answers.CompactionStarted}),
    Operation("POST", "/v1/approvals/{approval_id}", "Answer an approval",
              bodies.AnswerApproval, {200: answers.ApprovalAnswered}),
    Operation("POST", "/v1/user-inputs/{request_id}", "Answer a question",
              bodies.AnswerUserInput, {200: answers.UserInputAnswered}),
    Operation("GET", f"{_THREAD}/usage", "The thread's usage (kun usage)", None,
              {200: answers.UsageReport}),
    Operation("GET", "/v1/usage", "Usage of two threads side by side (?thread=A&thread=B)",
              None, {200: answers.UsageReport}),
    Operation("GET", f"{_THREAD}/transcript", "The transcript (kun replay)", None,
              {200: _media("text/plain")}),
    Operation("GET", f"{_THREAD}/log", "The raw log (JSON lines)", None,
              {200: _media("application/x-ndjson")}),
    Operation("GET", f"{_THREAD}/export",
              "The thread's bundle, streamed (kun export; ?compress=false: a plain tar)", None,
              {200: {**_media("application/gzip", _BINARY),
                     **_media("application/x-tar", _BINARY)}}),
    Operation("POST", "/v1/threads/import",
              "Import the body: a bundle, or ?from=codex|claude-code a session (kun import; "
              "?as=ID, ?name=FILE, ?workspace=DIR); 201 added, 200 already there", None,
              {201: answers.ImportDone, 200: answers.ImportDone}),
    Operation("GET", f"{_THREAD}/events",
              "The thread's events as Server-Sent Events (204: already past ?until)", None,
              {200: _media("text/event-stream"), 204: {}}),
    Operation("GET", "/v1/events", "Every thread's live events as Server-Sent Events", None,
              {200: _media("text/event-stream")}),
    Operation("GET", "/openapi.json", "This document", None,
              {200: _media("application/json", {"type": "object"})}),
    Operation("GET", "/docs", "This document as a page", None, {200: _media("text/html")}),
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
        _q("as", {"type": "string"}, "The thread's id here (beside a thread the import finds)"),
        _q("replace", {"type": "integer", "enum": [0, 1], "default": 0},
           "1: import what changed since it was imported in place of its thread, "
           "which goes to the trash"),
        _q("workspace", {"type": "string"},
           "Where the thread's new turns run: an absolute path to a folder on the server"),
        _q("name", {"type": "string"}, "The uploaded file's name"),
        _q("workspace", {"type": "string"},
           "An absolute folder on the server where the thread's new turns run"),
    ),
}  # fmt: skip

# Routes whose body is not JSON.
_BINARY_BODY: dict[tuple[str, str], dict[str, Any]] = {
    ("POST", "/v1/threads/import"): {
        "required": True,
        "content": {"application/octet-stream": {"schema": _BINARY}},
    },
}

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


_REFUSED = {
    "description": "Refused; the error names the field or the reason",
    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
}
_BUSY = {
    "description": "Too many open connections: retry after Retry-After seconds",
    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
}


def spec() -> dict[str, Any]:
    """The document, every schema from the Structs the routes decode and
    encode."""
    kinds: list[type[Any]] = []
    for op in OPERATIONS:
        found = [op.body, *op.answers.values()]
        kinds += [k for k in found if isinstance(k, type) and k not in kinds]
    refs, components = msgspec.json.schema_components(
        kinds, ref_template="#/components/schemas/{name}"
    )
    ref_of = dict(zip(kinds, refs, strict=True))
    components["Error"] = _ERROR
    paths: dict[str, dict[str, Any]] = {}
    for method, path, summary, body, answered in OPERATIONS:
        responses: dict[str, Any] = {}
        for status, answer in answered.items():
            content = (
                {"application/json": {"schema": ref_of[answer]}}
                if isinstance(answer, type)
                else answer
            )
            responses[str(status)] = {
                "description": "OK",
                **({"content": content} if content else {}),
            }
        responses["4XX"] = _REFUSED
        responses["503"] = _BUSY
        operation: dict[str, Any] = {"summary": summary, "responses": responses}
        if body is not None:
            operation["requestBody"] = {
                "required": False,
                "content": {"application/json": {"schema": ref_of[body]}},
            }
        key = (method, path)
        if key in _BINARY_BODY:
            operation["requestBody"] = _BINARY_BODY[key]
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
        "security": [{"bearer": []}],
        "paths": paths,
    }


@functools.cache
def _encoded() -> bytes:
    """The document, built once (its schemas take tens of milliseconds)."""
    return msgspec.json.encode(spec())


async def openapi(request: Request) -> Response:
    return Response(_encoded(), media_type="application/json")


async def docs(request: Request) -> Response:
    """The document as a page (``kun/web/static/docs.js`` draws it from
    ``/openapi.json``): no other host, no inline script."""
    return send_page(request, "docs.html")


def openapi_routes() -> list[BaseRoute]:
    return [
        Route("/openapi.json", openapi, methods=["GET"]),
        Route("/docs", docs, methods=["GET"]),
    ]
