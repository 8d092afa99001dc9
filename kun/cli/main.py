"""The ``kun`` command line.

Every command takes ``--home`` (default ``$KUN_HOME``, else ``~/.kun``). A
user mistake or a failure kun can explain is one line on stderr and a
non-zero exit, never a traceback. Heavy layers (HTTP, server, model) are
imported inside the commands that need them, so the CLI starts instantly.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from kun.chat.cli import chat, resume, session_options, start_session
from kun.cli.cleanup import gc, restore, rm, trash
from kun.cli.colors import no_color_option
from kun.cli.compact import compact
from kun.cli.config_command import config_command
from kun.cli.flags import runtime_flags
from kun.cli.options import explained, home_option
from kun.cli.portable import export_command, import_command
from kun.cli.remote import keep_server, server_options
from kun.cli.replay import replay
from kun.cli.run_command import run
from kun.cli.serve import serve
from kun.cli.steering import interrupt, steer
from kun.cli.threads import fork, reconcile, rewind, threads, usage
from kun.cli.trust_command import trust_command
from kun.errors import KunError

EXIT_FAILURE = 1
EXIT_BROKEN_PIPE = 128 + 13  # as if killed by SIGPIPE


class _Cli(click.Group):
    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        """click's main, but a usage error is one ``kun: error:`` line and
        exit status 1, like every other user mistake."""
        try:
            result = super().main(args, prog_name, complete_var, False, **extra)
        except click.ClickException as exc:
            if not standalone_mode:
                raise
            _fail(_usage_line(exc))
        except click.Abort:
            if not standalone_mode:
                raise
            _fail("interrupted", code=130)
        if standalone_mode:
            sys.exit(result if isinstance(result, int) else 0)
        return result

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except BaseExceptionGroup as group:
            _explain(_first_leaf(group), group)
        except (KunError, OSError, KeyboardInterrupt) as exc:
            _explain(exc, exc)


def _first_leaf(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """Task groups wrap an error in exception groups; the user needs the error."""
    leaf: BaseException = group
    while isinstance(leaf, BaseExceptionGroup):
        leaf = leaf.exceptions[0]
    return leaf


def _explain(exc: BaseException, raised: BaseException) -> None:
    if isinstance(exc, BrokenPipeError):
        _reader_gone()
    if isinstance(exc, KunError):
        _fail(explained(exc))
    if isinstance(exc, OSError):
        _fail(f"{exc.strerror or exc}: {exc.filename}" if exc.filename else str(exc))
    if isinstance(exc, KeyboardInterrupt):
        _fail("interrupted", code=130)
    raise raised


def _usage_line(exc: click.ClickException) -> str:
    message = " ".join(exc.format_message().split())
    ctx = getattr(exc, "ctx", None)
    if isinstance(exc, click.UsageError) and ctx is not None:
        message += f" (see '{ctx.command_path} --help')"
    return message


def _reader_gone() -> None:
    """The reader of stdout went away (``kun replay T | head``): stop
    quietly, as a tool killed by SIGPIPE does. stdout is pointed at
    /dev/null first so the interpreter's final flush cannot fail again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    sys.exit(EXIT_BROKEN_PIPE)


def _fail(message: str, code: int = EXIT_FAILURE) -> None:
    from kun.domain.shown import shown

    click.echo(f"kun: error: {shown(message)}", err=True)
    sys.exit(code)


@click.group(
    cls=_Cli,
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
    keep_server(ctx, server, token_env)
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


@cli.command()
@click.option(
    "--fast", is_flag=True, help="Do not pace the stream (it is paced only on a terminal)."
)
@no_color_option
@home_option
def demo(fast: bool, home: Path | None) -> None:
    """Run two real turns offline against a model scripted on 127.0.0.1,
    then show what the log makes possible: time travel, a fork, a usage
    comparison, a rewind (into a fresh temporary home unless --home)."""
    import tempfile

    from kun.cli.demo_tour import demo as run_demo
    from kun.store.paths import resolve_home

    root = resolve_home(home) if home is not None else Path(tempfile.mkdtemp(prefix="kun-demo-"))
    run_demo(root, fast=fast)


cli.add_command(chat)
cli.add_command(run)
for _command in (replay, threads, usage, rewind, fork, reconcile):
    cli.add_command(_command)
cli.add_command(resume)
cli.add_command(compact)
cli.add_command(config_command)
cli.add_command(trust_command)
cli.add_command(serve)
cli.add_command(export_command)
cli.add_command(import_command)
cli.add_command(steer)
cli.add_command(interrupt)
for _command in (gc, rm, restore, trash):
    cli.add_command(_command)


def main() -> None:
    cli(prog_name="kun")
