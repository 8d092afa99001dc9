"""What the log makes possible, shown on the demo's own thread.

After ``kun demo``'s turns, each step here is printed as the command a user
would type next (with the demo's ``--home``, so it works when pasted) and
then run through the same CLI entry point that command would reach, so the
output under it is real: the event count, a time-travel replay with
``--until-seq``, a fork at that moment, a usage comparison of the thread and
its fork, a rewind of the last turn and its undo. The undo comes last so
the thread ends as the turns left it: every printed command, pasted in the
order shown, runs again and exits 0 (a rewind left in force would make the
pasted rewind fail: the turn is already hidden).
"""

from __future__ import annotations

import contextlib
import io
import shlex
import sys
from pathlib import Path
from typing import TextIO

import click

from kun.app.logfile import events_in
from kun.cli.demo import DemoRun, DemoWire
from kun.contracts import events as ev
from kun.model.catalog import catalogue_source

__all__ = ["step_boundary", "tour"]


def step_boundary(path: Path) -> tuple[int, int]:
    """The number of events in the log, and the seq of the last event of
    the first model step: the tools have answered, the fix is not made."""
    events = events_in(path)
    boundary = next(e.seq - 1 for e in events if isinstance(e, ev.PipelineStage) and e.step == 1)
    return len(events), boundary


def _heading(out: TextIO, text: str, color: bool) -> None:
    out.write("\n" + (click.style(text, bold=True) if color else text) + "\n")
    out.flush()


def _command(out: TextIO, cli: click.Group, args: list[str], why: str, color: bool) -> str:
    """Print ``$ kun ARGS  # why``, run it with ``cli`` (the ``kun`` group) as
    ``kun`` would, print and return what it printed."""
    typed = "$ " + shlex.join(["kun", *args])
    note = f"  # {why}"
    if color:
        typed, note = click.style(typed, fg="cyan"), click.style(note, dim=True)
    out.write(f"\n{typed}{note}\n")
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            cli.main(args, prog_name="kun", standalone_mode=False)
    except SystemExit as exc:
        if exc.code:
            raise
    finally:
        out.write(printed.getvalue())
        out.flush()
    return printed.getvalue()


def tour(run: DemoRun, out: TextIO, cli: click.Group, *, color: bool = False) -> None:
    """Show what the log of ``run``'s thread makes possible, with the commands
    of ``cli``."""
    home = ["--home", str(run.home)]
    thread = run.thread_id
    count, seq = step_boundary(run.path)
    out.write(
        f"(The model was scripted on 127.0.0.1; its tokens are priced at "
        f"{run.catalog}/{run.model}'s "
        f"rates from {catalogue_source()}. Nothing was billed.)\n"
    )
    _heading(out, "What the log makes possible", color)
    out.write(
        f"Every change above is one event in {run.path}:\n"
        f"{count} events, one JSON line each. Everything below is rebuilt from them.\n"
    )
    at = f"seq {seq}, after the first tool results, before the fix"
    _command(
        out, cli, ["replay", thread, "--until-seq", str(seq), *home], f"time travel to {at}", color
    )
    fork = _command(out, cli, ["fork", thread, "--at-seq", str(seq), *home], "branch there", color)
    _command(
        out, cli, ["usage", thread, fork.strip(), *home], "the thread (A) vs its fork (B)", color
    )
    _command(
        out,
        cli,
        ["rewind", thread, "--before-turn", run.turn_ids[-1], *home],
        "hide the last turn; the log keeps it (replay --hidden)",
        color,
    )
    _command(out, cli, ["rewind", thread, "--undo", *home], "and bring it back", color)
    out.write(f"\nworkspace: {run.workspace}\n")


def demo(home: Path, cli: click.Group, *, fast: bool, wire: DemoWire = "chat_completions") -> None:
    """``kun demo``: the turns, paced on a terminal unless ``fast``, then
    the tour of ``cli``'s commands (the ``kun`` group, passed down by the
    command so that kun.cli needs no import of the composition root). A
    turn that does not complete is a failure (exit 1)."""
    import anyio

    from kun.cli.colors import use_color
    from kun.cli.demo import run_demo

    out = sys.stdout
    tty = out.isatty()
    color = use_color(out)
    run = anyio.run(lambda: run_demo(home, out, color=color, paced=tty and not fast, wire=wire))
    if any(status != "completed" for status in run.statuses):
        raise click.ClickException(f"a demo turn ended {', '.join(run.statuses)}")
    tour(run, out, cli, color=color)
