"""The composition root of the command line: the ``kun`` group, every command
registered on it (from :mod:`kun.cli` and the session's :mod:`kun.chat.cli`),
and the one choice of adapter every command then works through.

It sits above both surfaces so that neither imports the other's top layer:
``kun.cli`` and ``kun.chat`` are siblings, and only this module knows them
both (``tests/test_import_graph.py`` holds that). ``pyproject.toml``'s
``kun`` script and ``python -m kun`` call :func:`main`.

The adapter is chosen here, once, before the command runs: ``--server URL``
(or ``$KUN_SERVER``) names a running ``kun serve`` and the command works on
its threads; otherwise the home (``--home``, ``$KUN_HOME``, ``~/.kun``) is
opened in-process. The rules: ``$KUN_SERVER`` applies only to the commands
that can use a server (``kun serve`` and the other local commands stay
local), the session goes to a server only with ``--server`` on the command
line, ``--server`` given to a command that cannot use it is a usage error,
and the bearer token is read from the variable ``--token-env VAR`` names
(default ``$KUN_TOKEN``), never from the command line, where ``ps`` would
show it. The choice is kept in the click context (:func:`kun.cli.target.command_target`
reads it).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, TypeVar

import click

from kun.chat.cli import chat, resume, session_options, start_session
from kun.cli.cleanup import gc, restore, rm, trash
from kun.cli.compact import compact
from kun.cli.config_command import config_command
from kun.cli.flags import runtime_flags
from kun.cli.main import Cli, demo
from kun.cli.migrate import migrate
from kun.cli.portable import export_command, import_command
from kun.cli.remote import TOKEN_ENV, choose_remote
from kun.cli.replay import replay
from kun.cli.run_command import run
from kun.cli.serve import serve
from kun.cli.steering import interrupt, steer
from kun.cli.threads import fork, reconcile, rewind, threads, usage
from kun.cli.trust_command import trust_command

__all__ = ["REMOTE_COMMANDS", "SESSION_COMMANDS", "cli", "main"]

F = TypeVar("F", bound=Callable[..., Any])

REMOTE_COMMANDS = frozenset(
    {
        "compact", "export", "fork", "gc", "import", "interrupt", "reconcile", "replay",
        "restore", "rewind", "rm", "run", "steer", "threads", "trash", "usage",
    }
)  # fmt: skip
"""The commands that work on a server's threads with ``--server URL`` or
``$KUN_SERVER``."""
SESSION_COMMANDS = frozenset({None, "chat", "resume"})
"""The session (plain ``kun``, ``kun chat``, ``kun resume``): on a server
with ``--server URL`` given on the command line, never by ``$KUN_SERVER``."""


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
        help="Work on the threads of the kun serve at URL (the session, "
        f"{', '.join(sorted(REMOTE_COMMANDS))}; default: $KUN_SERVER, except for the session).",
    )(func)


def choose_adapter(ctx: click.Context, server: str | None, token_env: str | None) -> None:
    """Decide, for the command about to run, between the server named and
    the home; refuse ``--server`` (not ``$KUN_SERVER``) for a command that
    cannot use it."""
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
    choose_remote(ctx, _url(server), token, variable)


def _url(server: str) -> str:
    server = server.strip().rstrip("/")
    if not server:
        raise click.UsageError("--server: expected a URL such as http://127.0.0.1:8765")
    return server if "://" in server else f"http://{server}"


@click.group(
    cls=Cli,
    invoke_without_command=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.version_option(package_name="kun")
@click.option(
    "-c", "--continue", "continue_latest", is_flag=True,
    help="Resume the latest thread of this workspace.",
)  # fmt: skip
@session_options
@server_options
@click.pass_context
def cli(
    ctx: click.Context,
    /,
    continue_latest: bool,
    server: str | None,
    token_env: str | None,
    **options: Any,
) -> None:
    """kun: an event-sourced runtime for LLM agents.

    Alone, kun opens an interactive session on a new thread (-c: on this
    workspace's latest). Every change to a thread is an event in its
    events.jsonl; the commands below rebuild what you see from that log.
    With --server URL, the session (kun, -c, resume), run, replay, threads,
    usage, rewind, fork, compact, export, import, steer and interrupt work
    on the threads of a running kun serve.
    """
    choose_adapter(ctx, server, token_env)
    if ctx.invoked_subcommand is None:
        start_session(continue_latest=continue_latest, **options)
    elif continue_latest or any(v is not None for v in options.values()) or _runtime_given():
        raise click.UsageError(
            f"the session's options go after the command: kun {ctx.invoked_subcommand} ..."
        )


def _runtime_given() -> bool:
    """A runtime flag before a command's name (``kun --max-steps 3 run``),
    which the command would not see."""
    return runtime_flags().given()


for _command in (
    chat, resume, run, demo, replay, threads, usage, rewind, fork, reconcile, compact,
    export_command, import_command, steer, interrupt, gc, rm, restore, trash,
    config_command, trust_command, serve, migrate,
):  # fmt: skip
    cli.add_command(_command)


def main() -> None:
    """The ``kun`` console script."""
    cli(prog_name="kun")
