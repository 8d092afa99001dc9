"""The server a command works on, as the composition root chose it
(:mod:`kun.entry`: ``--server URL``, ``$KUN_SERVER``, ``--token-env VAR``),
and the options that do not go with one (:func:`local_only`).
"""

from __future__ import annotations

from dataclasses import dataclass

import click

__all__ = [
    "TOKEN_ENV",
    "Remote",
    "choose_remote",
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
