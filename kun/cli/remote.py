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
    from kun.client.legacy import AsyncKunClient

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
    """For the commands still on the old dict client (:mod:`kun.client.legacy`):
    why the server could not be used, in one line, in the words of the
    client (:func:`kun.client.explained`, :func:`kun.client.errors.unreachable`);
    an answer without the fields kun serve sends (another JSON API on that
    port) says so."""
    import httpx

    from kun.app.refusals import Refused
    from kun.client.legacy import ApiError

    understood = (httpx.HTTPError, httpx.InvalidURL, ApiError, Refused, KeyError, TypeError)
    try:
        yield
    except BaseExceptionGroup as group:
        from kun.cli.target import first_leaf

        leaf = first_leaf(group)
        if isinstance(leaf, understood):
            raise _mistake(remote, leaf) from None
        raise
    except understood as exc:
        raise _mistake(remote, exc) from None


def _mistake(remote: Remote, exc: Exception) -> Exception:
    from kun.app.refusals import refused
    from kun.client import explained as client_explained
    from kun.client.errors import unreachable
    from kun.client.legacy import ApiError

    if isinstance(exc, ApiError):
        if exc.status != 401 and exc.code != "workspace_missing":
            return exc
        try:
            with client_explained(
                remote.url, token_given=remote.token is not None, token_env=remote.token_env
            ):
                raise refused(exc.status, exc.code, exc.message, exc.field)
        except UserMistake as said:
            return said
    if isinstance(exc, KeyError | TypeError):
        return UserMistake(
            f"the answer from {remote.url} lacks what kun serve sends ({exc!r}): is it a kun serve?"
        )
    return unreachable(remote.url, exc)
