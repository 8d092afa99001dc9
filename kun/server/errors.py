"""Every error the API answers is ``{"error": {"code", "message", "field"?}}``
with a 4xx status that says whose fault it is, never a bare 500 or an HTML
page: clients classify by ``code``, people read ``message``.

kun's own errors keep their meaning across the wire (:func:`status_of`): a
thread or turn that does not exist is 404, an answer, steer or rewind that
the thread's state refuses is 409, any other user mistake is 400. A
failure kun can explain (a corrupt log, a lost lock) is a 500 that still
names its code; anything else is ``internal`` and logged with its
traceback.

A message never shows where the server keeps its home: a path inside it
is written ``<home>/threads/<id>/...`` (:func:`home_relative`), so an
error body tells a client which thread or file, not the server's layout
or user name. A client that hangs up before its body arrived is no
error of the server's: one line at info, no traceback.
"""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path

import msgspec
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Match, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kun.app.local_errors import (
    GoalRefused,
    InvalidCursor,
    InvalidWorkspace,
    NoGoal,
    TurnUnreachable,
)
from kun.app.lookup import AmbiguousThreadId
from kun.app.refusals import Refused
from kun.app.trash import NotInTrash, RestoreConflict
from kun.domain.turnref import NoSuchTurn, NothingToUndo, TurnAlreadyHidden
from kun.errors import KunError, RuntimeFailure
from kun.model.errors import AttachmentTooLarge
from kun.runtime.errors import (
    AnswerConflict,
    BlankPrompt,
    QueueFull,
    SeqOutOfRange,
    SteeringFull,
    ThreadBusy,
    TurnNotRunning,
    UnknownTurn,
    WorkspaceMissing,
)
from kun.store.errors import InvalidThreadId, ThreadLocked, ThreadNotFound

__all__ = [
    "ApiError",
    "InternalErrors",
    "error_response",
    "exception_handlers",
    "home_relative",
    "status_of",
]

_log = logging.getLogger(__name__)

_STATUS: tuple[tuple[type[KunError], int, str], ...] = (
    (InvalidThreadId, 400, "invalid_id"),
    (ThreadNotFound, 404, "thread_not_found"),
    (AmbiguousThreadId, 400, "ambiguous_thread_id"),
    (UnknownTurn, 404, "turn_not_found"),
    (NoSuchTurn, 404, "turn_not_found"),
    (AnswerConflict, 409, "not_pending"),
    (ThreadBusy, 409, "thread_busy"),
    (QueueFull, 409, "turns_queued"),
    (TurnNotRunning, 409, "turn_not_running"),
    (SteeringFull, 409, "steering_full"),
    (NothingToUndo, 409, "nothing_to_undo"),
    (TurnAlreadyHidden, 409, "turn_already_hidden"),
    (ThreadLocked, 409, "thread_locked"),
    (WorkspaceMissing, 409, "workspace_missing"),
    (BlankPrompt, 422, "blank"),
    (SeqOutOfRange, 422, "seq_out_of_range"),
    (AttachmentTooLarge, 413, "attachment_too_large"),
    (InvalidWorkspace, 400, "invalid_workspace"),
    (InvalidCursor, 400, "invalid_query"),
    (NoGoal, 409, "no_goal"),
    (GoalRefused, 409, "goal_refused"),
    (TurnUnreachable, 409, "turn_unreachable"),
    (NotInTrash, 404, "not_in_trash"),
    (RestoreConflict, 409, "thread_exists"),
)
_FIELD = {
    InvalidThreadId: "thread_id",
    BlankPrompt: "text",
    SeqOutOfRange: "at_seq",
    WorkspaceMissing: "workspace",
    InvalidWorkspace: "workspace",
    InvalidCursor: "cursor",
    GoalRefused: "status",
    RestoreConflict: "as_id",
}


class ApiError(Exception):
    """A refusal the handlers raise: status, code, message and the field
    of the request it is about."""

    def __init__(self, status: int, code: str, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.field = field


def error_response(status: int, code: str, message: str, field: str | None = None) -> Response:
    body: dict[str, str] = {"code": code, "message": message}
    if field is not None:
        body["field"] = field
    return Response(
        msgspec.json.encode({"error": body}), status_code=status, media_type="application/json"
    )


def status_of(exc: KunError) -> tuple[int, str, str | None]:
    """The status, code and field a kun error is answered with (a refusal
    another worker answered keeps its own, :mod:`kun.app.forwarding`)."""
    if isinstance(exc, Refused):
        return exc.status, exc.code, exc.field
    for kind, status, code in _STATUS:
        if isinstance(exc, kind):
            return status, code, _FIELD.get(kind)
    if isinstance(exc, RuntimeFailure):
        return 500, _snake(type(exc).__name__), None
    return 400, "invalid_request", None


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def home_relative(message: str, home: Path | None) -> str:
    """``message`` with every path under ``home`` (as given or resolved)
    written ``<home>/...``."""
    if home is None:
        return message
    for root in sorted({str(home), str(home.resolve())}, key=len, reverse=True):
        message = message.replace(root + os.sep, "<home>/")
        message = re.sub(re.escape(root) + r"(?![\w.-])", "<home>", message)
    return message


def _home_of(request: Request) -> Path | None:
    backend = getattr(request.app.state, "backend", None)
    home = getattr(backend, "home", None)
    return home if isinstance(home, Path) else None


async def _api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    message = home_relative(exc.message, _home_of(request))
    return error_response(exc.status, exc.code, message, exc.field)


async def _kun_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, KunError)
    status, code, field = status_of(exc)
    if status >= 500:
        _log.error("%s %s: %s", request.method, request.url.path, exc)
    message = exc.over_http() if isinstance(exc, WorkspaceMissing) else str(exc)
    return error_response(status, code, home_relative(message, _home_of(request)), field)


async def _hung_up(request: Request, exc: Exception) -> Response:
    _log.info("%s %s: the client hung up before its body arrived", request.method, request.url.path)
    return error_response(400, "client_disconnected", "the client hung up before its body arrived")


_HTTP_CODES = {404: "not_found", 405: "method_not_allowed"}


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    code = _HTTP_CODES.get(exc.status_code, "http_error")
    message = (
        f"no route {request.method} {request.url.path}"
        if exc.status_code in (404, 405)
        else exc.detail
    )
    response = error_response(exc.status_code, code, message)
    if exc.headers:
        response.headers.update(exc.headers)
    if exc.status_code == 405:
        response.headers["Allow"] = ", ".join(_allowed(request))
    return response


def _allowed(request: Request) -> list[str]:
    """Every method some route of the path takes: a path served by several
    routes (``GET`` and ``POST /v1/threads``) would otherwise name only
    the first one's."""
    methods: set[str] = set()
    for route in request.app.router.routes:
        if isinstance(route, Route) and route.matches(request.scope)[0] is not Match.NONE:
            methods |= route.methods or set()
    return sorted(methods)


def exception_handlers() -> dict[type[Exception] | int, object]:
    return {
        ApiError: _api_error,
        ClientDisconnect: _hung_up,
        KunError: _kun_error,
        HTTPException: _http_error,
    }


class InternalErrors:
    """The outermost of the app's middleware: an exception nothing else
    answered is logged once, with its traceback, and answered 500
    ``internal`` (when the answer has not begun). Starlette's own last
    handler would answer it and raise it again, so the server logged the
    same traceback a second time."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def watch(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, watch)
        except Exception as exc:
            _log.exception("%s %s failed", scope["method"], scope["path"])
            if not started:
                answer = error_response(500, "internal", f"internal error: {type(exc).__name__}")
                await answer(scope, receive, send)
