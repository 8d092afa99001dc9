"""The server a command works on, as the composition root chose it
(:mod:`kun.entry`: ``--server URL``, ``$KUN_SERVER``, ``--token-env VAR``),
and a server that cannot be used said in one line (:func:`explained`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

import click

from kun.errors import UserMistake

if TYPE_CHECKING:
    from kun.client.legacy import AsyncKunClient, KunClient

__all__ = [
    "TOKEN_ENV",
    "Remote",
    "choose_remote",
    "explained",
    "local_only",
    "remote_target",
]

TOKEN_ENV = "KUN_TOKEN"
_META = "kun.remote"


@dataclass(frozen=True)
class Remote:
    """Where the server is and how to prove who we are."""

    url: str
    token: str | None
    token_env: str

    def client(self) -> KunClient:
        from kun.client.legacy import KunClient

        return KunClient(self.url, token=self.token)

    def async_client(self) -> AsyncKunClient:
        from kun.client.legacy import AsyncKunClient

        return AsyncKunClient(self.url, token=self.token)

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}


def choose_remote(ctx: click.Context, url: str, token: str | None, token_env: str) -> None:
    """Record, for the whole command line, that the command works on the
    server at ``url`` (the composition root decides: :func:`kun.entry.choose_adapter`)."""
    ctx.meta[_META] = Remote(url, token, token_env)


def remote_target() -> Remote | None:
    """The server the running command works on, or ``None`` (local)."""
    ctx = click.get_current_context(silent=True)
    remote: Remote | None = ctx.meta.get(_META) if ctx is not None else None
    return remote


def local_only(**given: object) -> None:
    """Refuse options that mean something only here (a home, a config file)
    or that the API does not offer."""
    for name, value in given.items():
        if value not in (None, False):
            flag = "--" + name.replace("_", "-")
            raise click.UsageError(f"{flag} does not go with --server")


@contextmanager
def explained(remote: Remote) -> Iterator[None]:
    """Say in one line why the server could not be used: nothing listening,
    a missing or wrong token, a lost connection, its refusal, or an answer
    without the fields kun serve sends (another JSON API on that port)."""
    import httpx

    from kun.client.legacy import ApiError

    understood = (httpx.HTTPError, httpx.InvalidURL, ApiError, KeyError, TypeError)
    try:
        yield
    except BaseExceptionGroup as group:
        leaf = _first_leaf(group)
        if isinstance(leaf, understood):
            raise _mistake(remote, leaf) from None
        raise
    except understood as exc:
        raise _mistake(remote, exc) from None


def _first_leaf(group: BaseExceptionGroup[BaseException]) -> BaseException:
    leaf: BaseException = group
    while isinstance(leaf, BaseExceptionGroup):
        leaf = leaf.exceptions[0]
    return leaf


def _mistake(remote: Remote, exc: Exception) -> UserMistake:
    import httpx

    from kun.client.legacy import ApiError

    if isinstance(exc, ApiError):
        if exc.code == "workspace_missing":
            return _workspace_missing(exc.message)
        if exc.status != 401:
            return exc
        if remote.token is None:
            return UserMistake(
                f"the server at {remote.url} wants a token: put it in ${remote.token_env} "
                "(or name its variable with --token-env VAR)"
            )
        return UserMistake(f"the server at {remote.url} refused the token in ${remote.token_env}")
    if isinstance(exc, httpx.ConnectError) and _unresolved(exc):
        return UserMistake(f"--server {remote.url}: no such host ({exc})")
    if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout):
        return UserMistake(f"nothing is listening at {remote.url} — is `kun serve` running?")
    if isinstance(exc, httpx.UnsupportedProtocol | httpx.InvalidURL):
        return UserMistake(f"--server {remote.url}: not an http:// or https:// URL")
    if isinstance(exc, KeyError | TypeError):
        return UserMistake(
            f"the answer from {remote.url} lacks what kun serve sends ({exc!r}): is it a kun serve?"
        )
    return UserMistake(f"lost the server at {remote.url}: {exc or type(exc).__name__}")


def _workspace_missing(message: str) -> UserMistake:
    """The server's ``workspace_missing`` in the command line's words (the
    CLI writes the command out with the ``--server`` and ``--token-env`` in
    use, :func:`kun.cli.options.explained`)."""
    import re
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
    import socket

    cause: BaseException | None = exc
    while cause is not None and not isinstance(cause, socket.gaierror):
        cause = cause.__cause__ or cause.__context__
    return cause is not None
