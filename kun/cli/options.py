"""What the CLI's command modules share: ``--home`` and the commands kun
prints for the user to paste. Only click is imported here."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

__all__ = ["explained", "given_store", "home_option", "pasteable", "store_option", "written_out"]

F = TypeVar("F", bound=Callable[..., Any])


_HOME = "kun.home"
_STORE = "kun.store"


def home_option(func: F) -> F:
    return click.option(
        "--home",
        type=click.Path(file_okay=False, path_type=Path),
        default=None,
        callback=_remember_home,
        help="kun home directory (default: $KUN_HOME, else ~/.kun).",
    )(func)


def store_option(func: F) -> F:
    """``--store URL``: the database the command works on instead of the
    home's files (:mod:`kun.app.stores`). Kept in the context's ``meta``,
    where :func:`kun.cli.target.command_target` finds it, so the commands
    need no parameter for it."""
    return click.option(
        "--store",
        default=None,
        metavar="URL",
        expose_value=False,
        callback=_remember_store,
        help="Work on the threads of the PostgreSQL database at URL "
        "(default: [store] url of kun.toml, else the home). Password: $PGPASSWORD or ~/.pgpass.",
    )(func)


def _remember_store(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value is not None:
        ctx.meta[_STORE] = value


def given_store() -> str | None:
    """The ``--store`` of the running command, if any."""
    ctx = click.get_current_context(silent=True)
    return None if ctx is None else ctx.meta.get(_STORE)


def _remember_home(ctx: click.Context, param: click.Parameter, value: Path | None) -> Path | None:
    """Kept in the context's ``meta`` (shared by the whole command line),
    so a hint composed after the command's context closed (an error on its
    way out) still knows the home (:func:`pasteable`)."""
    if value is not None:
        ctx.meta[_HOME] = value
    return value


def pasteable(*args: str) -> str:
    """``kun ARGS`` as the user should paste it here: with the ``--server``
    (and a ``--token-env`` other than the default) the running command
    works on, the ``--store`` it was given (without a password: libpq
    finds that in ``$PGPASSWORD`` or ``~/.pgpass``), and the ``--home`` it
    was given when that is not the home ``kun`` would find by itself. A
    hint without them would name a thread the pasted command cannot find."""
    import shlex

    from kun.app.home import resolve_home
    from kun.cli.remote import TOKEN_ENV, remote_target

    words = ["kun"]
    remote = remote_target()
    if remote is not None:
        words += ["--server", remote.url]
        if remote.token_env != TOKEN_ENV:
            words += ["--token-env", remote.token_env]
    words += args
    store = given_store()
    if store is not None:
        from kun.app.stores import shown_url

        words += ["--store", shown_url(store)]
    home = _given_home()
    if home is not None and resolve_home(home) != resolve_home(None):
        words += ["--home", str(resolve_home(home))]
    return shlex.join(words)


def explained(exc: BaseException) -> str:
    """The message of ``exc``, the commands it suggests (``suggests`` and
    ``also_suggests`` of a :class:`~kun.errors.KunError`) written as
    :func:`pasteable` writes them."""
    suggests: tuple[str, ...] = getattr(exc, "suggests", ())
    also: tuple[tuple[str, ...], ...] = getattr(exc, "also_suggests", ())
    return written_out(str(exc), *((suggests, *also) if suggests else also))


def written_out(message: str, *commands: tuple[str, ...]) -> str:
    """``message`` with each ``kun ARGS`` of ``commands`` in it written as
    :func:`pasteable` writes it (for text composed where the CLI's
    ``--home`` and ``--server`` are unknown, which names the command it
    suggests by its arguments)."""
    import shlex

    for command in commands:
        message = message.replace(shlex.join(["kun", *command]), pasteable(*command))
    return message


def _given_home() -> Path | None:
    """The ``--home`` of the running command (or of the group, for the
    session), if any."""
    ctx = click.get_current_context(silent=True)
    if ctx is not None and _HOME in ctx.meta:
        return Path(ctx.meta[_HOME])
    while ctx is not None:
        home = ctx.params.get("home")
        if home is not None:
            return Path(home)
        ctx = ctx.parent
    return None
