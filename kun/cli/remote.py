"""``kun --server URL ...``: the commands that can work on a thread held by a
running ``kun serve`` instead of the local home (the session, ``run``, ``replay``,
``threads``, ``usage``, ``rewind``, ``fork``, ``compact``, ``export``,
``import``, ``steer``, ``interrupt``), so one server holds the threads while
several terminals and programs follow and steer them.

The server is named by ``--server URL`` or ``$KUN_SERVER``; its bearer token
is read from the environment variable named by ``--token-env VAR`` (default
``$KUN_TOKEN``), never from the command line, where ``ps`` would show it.
``$KUN_SERVER`` only applies to the commands that can use it (``kun serve``
stays local, and the session goes to a server only with ``--server`` on
the command line: :mod:`kun.chat.remote`); ``--server`` given to any other command is a
usage error. Everything goes through :mod:`kun.client`; a server that is not
there, a refused token and every other refusal are one line, exit status 1.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import click

from kun.errors import UserMistake

if TYPE_CHECKING:
    from kun.client.legacy import AsyncKunClient, KunClient

__all__ = [
    "REMOTE_COMMANDS",
    "Remote",
    "explained",
    "local_only",
    "remote_target",
    "server_options",
]

F = TypeVar("F", bound=Callable[..., Any])

REMOTE_COMMANDS = frozenset(
    {
        "compact", "export", "fork", "import", "interrupt", "replay", "rewind", "run", "steer",
        "threads", "usage",
    }
)  # fmt: skip
SESSION_COMMANDS = frozenset({None, "chat", "resume"})
"""The session (plain ``kun``, ``kun chat``, ``kun resume``): on a server
with ``--server URL`` given on the command line, never by ``$KUN_SERVER``."""
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


def server_options(func: F) -> F:
    """The group's ``--server`` and ``--token-env``."""
    func = click.option(
        "--token-env",
        "token_env",
        default=None,
        metavar="VAR",
        help=f"With --server: the bearer token is in $VAR (default: ${TOKEN_ENV}).",
    )(func)
    return click.option(
        "--server",
        "server",
        default=None,
        envvar="KUN_SERVER",
        metavar="URL",
        help="Work on the threads of the kun serve at URL (the session, run, replay, threads, "
        "usage, rewind, fork, compact, export, import, steer, interrupt; default: $KUN_SERVER, "
        "except for the session).",
    )(func)


def keep_server(ctx: click.Context, server: str | None, token_env: str | None) -> None:
    """Record the server for the command about to run; refuse ``--server``
    (not ``$KUN_SERVER``) for a command that cannot use it."""
    from click.core import ParameterSource

    if server is None:
        if token_env is not None:
            raise click.UsageError("--token-env goes with --server URL")
        return
    from_environment = ctx.get_parameter_source("server") is ParameterSource.ENVIRONMENT
    session = ctx.invoked_subcommand in SESSION_COMMANDS
    if ctx.invoked_subcommand not in REMOTE_COMMANDS and not session:
        if from_environment:
            return
        what = f"kun {ctx.invoked_subcommand}" if ctx.invoked_subcommand else "the session"
        raise click.UsageError(
            f"--server works with the session and {', '.join(sorted(REMOTE_COMMANDS))}; "
            f"not with {what}"
        )
    if session and from_environment:
        return  # the session goes to a server only when told on the command line
    variable = token_env or TOKEN_ENV
    token = os.environ.get(variable) or None
    if token_env is not None and token is None:
        raise click.UsageError(f"--token-env {token_env}: ${token_env} is not set or empty")
    ctx.meta[_META] = Remote(_url(server), token, variable)


def _url(server: str) -> str:
    server = server.strip().rstrip("/")
    if not server:
        raise click.UsageError("--server: expected a URL such as http://127.0.0.1:8765")
    return server if "://" in server else f"http://{server}"


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

    from kun.app.refusals import Refused
    from kun.client.legacy import ApiError

    understood = (httpx.HTTPError, httpx.InvalidURL, ApiError, Refused, KeyError, TypeError)
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

    from kun.app.refusals import Refused
    from kun.client.legacy import ApiError

    if isinstance(exc, ApiError | Refused):
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
