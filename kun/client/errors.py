"""What goes wrong between the client and ``kun serve``, each as one line.

A refusal is the server's own error (:func:`kun.app.refusals.refused`: its
class names whose fault it is, its text is the server's message alone). An
answer that is not kun's (a proxy's HTML page, another web server on that
port) is a :class:`~kun.app.refusals.Refused` with code ``not_kun`` whose
text is one line, however long the page. A server that cannot be reached
(nothing listening, an unknown host, a lost connection) is
:class:`Unreachable`; a stream that kept dropping is :class:`StreamLost`.
All are :class:`~kun.errors.UserMistake`, so a command prints them as one
``kun: error:`` line.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import msgspec

from kun.app.refusals import Refused, refused
from kun.errors import UserMistake

if TYPE_CHECKING:
    import httpx

__all__ = [
    "ApiError",
    "StreamLost",
    "Unreachable",
    "explained",
    "not_kun",
    "refusal",
    "transport_failures",
    "unreachable",
]

ApiError = Refused
"""The name older code catches."""


class Unreachable(UserMistake):
    """The server could not be reached, or the connection to it was lost."""

    def __init__(self, url: str, message: str) -> None:
        super().__init__(message)
        self.url = url


class StreamLost(UserMistake):
    """An event stream dropped more times in a row than the client retries;
    ``seq``: the last event it delivered (resume after it)."""

    def __init__(self, thread_id: str, seq: int, reason: str) -> None:
        super().__init__(f"lost the event stream of thread {thread_id} at seq {seq}: {reason}")
        self.thread_id = thread_id
        self.seq = seq


def refusal(response: httpx.Response) -> Refused:
    """The error a refused request carries: kun's JSON error, else one line
    saying the answer is not kun's."""
    try:
        error = msgspec.json.decode(response.content, type=_Error).error
    except (msgspec.DecodeError, msgspec.ValidationError):
        return not_kun(response)
    return refused(response.status_code, error.code, error.message, error.field)


_TITLE = re.compile(r"<title>(.*?)</title>", re.IGNORECASE | re.DOTALL)


def not_kun(response: httpx.Response, why: str = "") -> Refused:
    """An HTML page or other text would spill its lines into the one-line
    error; its title (or its first words) says enough."""
    import httpx

    kind = response.headers.get("content-type", "no content type").split(";")[0]
    try:
        text = response.text
    except httpx.ResponseNotRead:
        text = why or "a download without kun's X-Kun-Thread"
    title = _TITLE.search(text)
    words = " ".join((title.group(1) if title else text).split())
    return refused(
        response.status_code, "not_kun", f"the answer is not kun's ({kind}: {words[:80]!r})"
    )


def unreachable(url: str, exc: Exception) -> Unreachable:
    """A transport failure in words: nothing listening, no such host, not
    an http(s) URL, or a lost connection."""
    import httpx

    if isinstance(exc, httpx.ConnectError) and _unresolved(exc):
        return Unreachable(url, f"--server {url}: no such host ({exc})")
    if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout):
        return Unreachable(url, f"nothing is listening at {url} — is `kun serve` running?")
    if isinstance(exc, httpx.UnsupportedProtocol | httpx.InvalidURL):
        return Unreachable(url, f"--server {url}: not an http:// or https:// URL")
    return Unreachable(url, f"lost the server at {url}: {exc or type(exc).__name__}")


@contextmanager
def transport_failures(url: str) -> Iterator[None]:
    """Turn httpx's transport errors into :class:`Unreachable`."""
    import httpx

    try:
        yield
    except (httpx.TransportError, httpx.InvalidURL) as exc:
        raise unreachable(url, exc) from None


@contextmanager
def explained(url: str, *, token_given: bool, token_env: str = "KUN_TOKEN") -> Iterator[None]:
    """For a command line: a refused or missing token in the words of the
    variable that holds it, and the server's ``workspace_missing`` with the
    ``kun run`` that fixes it."""
    try:
        yield
    except Refused as exc:
        if exc.code == "workspace_missing":
            raise _workspace_missing(exc.message) from None
        if exc.status != 401:
            raise
        if not token_given:
            raise UserMistake(
                f"the server at {url} wants a token: put it in ${token_env} "
                "(or name its variable with --token-env VAR)"
            ) from None
        raise UserMistake(f"the server at {url} refused the token in ${token_env}") from None


def _workspace_missing(message: str) -> UserMistake:
    """The server's ``workspace_missing`` in the command line's words (the
    CLI writes the command out with the ``--server`` and ``--token-env`` in
    use, :func:`kun.cli.options.explained`)."""
    import shlex

    found = re.search(r"; PATCH /v1/threads/(\S+) with .*$", message)
    if found is None:
        return UserMistake(message)
    command = ("run", "--thread", found[1], "--workspace", "DIR", "PROMPT")
    hint = (
        f"; {shlex.join(['kun', *command])} "
        "(a folder on the server's machine) gives it one (HTTP 409, workspace_missing)"
    )
    mistake = UserMistake(message[: found.start()] + hint)
    mistake.suggests = command
    return mistake


def _unresolved(exc: BaseException) -> bool:
    """The host name did not resolve (a typo), which is no server down."""
    cause: BaseException | None = exc
    while cause is not None and not isinstance(cause, socket.gaierror):
        cause = cause.__cause__ or cause.__context__
    return cause is not None


class _ErrorBody(msgspec.Struct):
    code: str
    message: str
    field: str | None = None


class _Error(msgspec.Struct):
    error: _ErrorBody
