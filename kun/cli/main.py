"""The ``kun`` command line's own parts: :class:`Cli`, the group's error
handling, and the ``demo`` and ``run`` commands. The group itself is built,
and every command registered, by the composition root :mod:`kun.entry`.

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

from kun.cli.colors import no_color_option
from kun.cli.options import explained, home_option
from kun.errors import KunError

EXIT_FAILURE = 1
EXIT_BROKEN_PIPE = 128 + 13  # as if killed by SIGPIPE


class Cli(click.Group):
    """The group class of ``kun``: every user mistake is one line."""

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


@click.command()
@click.option(
    "--fast", is_flag=True, help="Do not pace the stream (it is paced only on a terminal)."
)
@click.option(
    "--format",
    "wire",
    type=click.Choice(["chat_completions", "gemini"]),
    default="chat_completions",
    show_default=True,
    help="The wire format the scripted model speaks.",
)
@no_color_option
@home_option
def demo(fast: bool, wire: str, home: Path | None) -> None:
    """Run two real turns offline against a model scripted on 127.0.0.1,
    then show what the log makes possible: time travel, a fork, a usage
    comparison, a rewind (into a fresh temporary home unless --home)."""
    import tempfile

    from kun.app.home import resolve_home
    from kun.cli.demo_tour import demo as run_demo

    root = resolve_home(home) if home is not None else Path(tempfile.mkdtemp(prefix="kun-demo-"))
    group = click.get_current_context().find_root().command
    assert isinstance(group, click.Group)
    run_demo(root, group, fast=fast, wire="gemini" if wire == "gemini" else "chat_completions")
