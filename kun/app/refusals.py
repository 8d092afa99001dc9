"""The errors of kun's application interface once they crossed the wire.

``kun serve`` answers every refusal as ``{"error": {"code", "message",
"field"?}}`` with a status that says whose fault it is
(:mod:`kun.server.errors`). The HTTP adapter raises it as a
:class:`Refused` of the class its status names, carrying ``status``,
``code``, ``message`` and ``field``; its text is the message alone, as the
in-process adapter's error says it, so a surface prints the same line
whichever adapter ran. Catch :class:`kun.errors.KunError` (or
:class:`~kun.errors.UserMistake`) to handle both.
"""

from __future__ import annotations

from kun.errors import UserMistake

__all__ = [
    "BadRequest",
    "Conflict",
    "NotFound",
    "Refused",
    "ServerFailed",
    "Unauthorized",
    "refused",
]


class Refused(UserMistake):
    """A request the server refused."""

    def __init__(self, status: int, code: str, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.field = field


class BadRequest(Refused):
    """400, 413, 415, 422: the request itself is wrong."""


class Unauthorized(Refused):
    """401: no token, or not the server's."""


class NotFound(Refused):
    """404: no such thread, turn, approval or question."""


class Conflict(Refused):
    """409: the thread's state refuses it now (a turn is running, the
    thread is locked, an answer came already)."""


class ServerFailed(Refused):
    """5xx: a failure on the server (a corrupt log, a lost lock)."""


def refused(status: int, code: str, message: str, field: str | None = None) -> Refused:
    """The :class:`Refused` of the class ``status`` names."""
    kind: type[Refused]
    if status == 401:
        kind = Unauthorized
    elif status == 404:
        kind = NotFound
    elif status == 409:
        kind = Conflict
    elif status >= 500:
        kind = ServerFailed
    elif status >= 400:
        kind = BadRequest
    else:
        kind = Refused
    return kind(status, code, message, field)
