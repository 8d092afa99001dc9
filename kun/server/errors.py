"""Every error the API answers is ``{"error": {"code", "message", "field"?}}``
with a 4xx status that says whose fault it is, never a bare 500 or an HTML
page: clients classify by ``code``, people read ``message``.

kun's own errors keep their meaning across the wire (:func:`status_of`): a
thread or turn that does not exist is 404, an answer, steer or rewind that
the thread's state refuses is 409, any other user mistake is 400. A
failure kun can explain (a corrupt log, a lost lock) is a 500 that still
names its code; anything else is ``internal`` and logged with its
traceback.
"""

from __future__ import annotations

import logging
import re

import msgspec
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from kun.domain.turnref import NoSuchTurn, NothingToUndo, TurnAlreadyHidden
from kun.errors import KunError, RuntimeFailure
from kun.model.errors import AttachmentTooLarge
from kun.runtime.errors import (
    AnswerConflict,
    BlankPrompt,
    SeqOutOfRange,
    SteeringFull,
    ThreadBusy,
    TurnNotRunning,
    UnknownTurn,
    WorkspaceMissing,
)
from kun.store.errors import InvalidThreadId, ThreadLocked, ThreadNotFound

__all__ = ["ApiError", "error_response", "exception_handlers", "status_of"]

_log = logging.getLogger(__name__)

_STATUS: tuple[tuple[type[KunError], int, str], ...] = (
    (InvalidThreadId, 400, "invalid_id"),
    (ThreadNotFound, 404, "thread_not_found"),
    (UnknownTurn, 404, "turn_not_found"),
    (NoSuchTurn, 404, "turn_not_found"),
    (AnswerConflict, 409, "not_pending"),
    (ThreadBusy, 409, "thread_busy"),
    (TurnNotRunning, 409, "turn_not_running"),
    (SteeringFull, 409, "steering_full"),
    (NothingToUndo, 409, "nothing_to_undo"),
    (TurnAlreadyHidden, 409, "turn_already_hidden"),
    (ThreadLocked, 409, "thread_locked"),
    (WorkspaceMissing, 409, "workspace_missing"),
    (BlankPrompt, 422, "blank"),
    (SeqOutOfRange, 422, "seq_out_of_range"),
    (AttachmentTooLarge, 413, "attachment_too_large"),
)
_FIELD = {
    InvalidThreadId: "thread_id",
    BlankPrompt: "text",
    SeqOutOfRange: "at_seq",
    WorkspaceMissing: "workspace",
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
    """The status, code and field a kun error is answered with."""
    for kind, status, code in _STATUS:
        if isinstance(exc, kind):
            return status, code, _FIELD.get(kind)
    if isinstance(exc, RuntimeFailure):
        return 500, _snake(type(exc).__name__), None
    return 400, "invalid_request", None


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


async def _api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return error_response(exc.status, exc.code, exc.message, exc.field)


async def _kun_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, KunError)
    status, code, field = status_of(exc)
    if status >= 500:
        _log.error("%s %s: %s", request.method, request.url.path, exc)
    message = exc.over_http() if isinstance(exc, WorkspaceMissing) else str(exc)
    return error_response(status, code, message, field)


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
    return response


async def _internal(request: Request, exc: Exception) -> Response:
    _log.exception("%s %s failed", request.method, request.url.path)
    return error_response(500, "internal", f"internal error: {type(exc).__name__}")


def exception_handlers() -> dict[type[Exception] | int, object]:
    return {
        ApiError: _api_error,
        KunError: _kun_error,
        HTTPException: _http_error,
        Exception: _internal,
    }
