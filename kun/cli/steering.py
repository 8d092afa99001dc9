"""``kun steer THREAD TEXT`` and ``kun interrupt THREAD``: reach a turn that
is running, from another terminal or a script.

A turn runs inside the process that started it, and only that process can
steer or stop it. With ``--server URL`` that process is a ``kun serve``,
which takes both over HTTP (:mod:`kun.cli.remote_steering`): the text is
queued for the model's next step, or the turn is stopped and recorded as
``turn_aborted``. Without a server the turn runs in a ``kun run`` or
``kun chat`` elsewhere, which has no door for another process: the command
says so in one line (which process, where to type instead), as it does for
a thread with no running turn or a turn a stopped kun left open (``kun
reconcile`` settles it). Every refusal is one line and exit status 1; the
lines that say it worked are the same wherever the thread is held.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import NoReturn

import click

from kun.cli.options import home_option
from kun.cli.remote import local_only, remote_target
from kun.errors import UserMistake

__all__ = ["NoRunningTurn", "interrupt", "interrupted_line", "steer", "steered_line"]


class NoRunningTurn(UserMistake):
    def __init__(self, thread_id: str) -> None:
        super().__init__(f"thread {thread_id} has no running turn")
        self.thread_id = thread_id


def steered_line(thread_id: str, turn_id: str) -> str:
    return f"steered turn {turn_id} of thread {thread_id}: the model reads it at its next step"


def interrupted_line(thread_id: str, turn_id: str, status: str) -> str:
    return f"interrupted turn {turn_id} of thread {thread_id} ({status})"


_turn_option = click.option(
    "--turn",
    "turn_id",
    default=None,
    metavar="TURN_ID",
    help="The turn to reach (default: the thread's running turn).",
)


@click.command()
@click.argument("thread")
@click.argument("text")
@_turn_option
@home_option
def steer(thread: str, text: str, turn_id: str | None, home: Path | None) -> None:
    """Add TEXT (- reads stdin) to THREAD's running turn: the model reads it
    at its next step, as if typed during the turn in a session."""
    from kun.cli.runjson import prompt_argument

    message = prompt_argument(text, sys.stdin)
    if not message.strip():
        raise click.UsageError("nothing to steer with: TEXT is blank")
    remote = remote_target()
    if remote is None:
        _local_refusal(home, thread, "steer it by typing in its session while the turn runs")
    from kun.cli.remote_steering import remote_steer

    local_only(home=home)
    click.echo(remote_steer(remote, thread, turn_id, message))


@click.command()
@click.argument("thread")
@_turn_option
@click.option(
    "--discard",
    is_flag=True,
    help="Drop what the turn produced so far (its prompt stays); else it is kept, sealed.",
)
@home_option
def interrupt(thread: str, turn_id: str | None, discard: bool, home: Path | None) -> None:
    """Stop THREAD's running turn; the log records it as aborted."""
    remote = remote_target()
    if remote is None:
        _local_refusal(home, thread, "interrupt it there (Esc or Ctrl-C)")
    from kun.cli.remote_steering import remote_interrupt

    local_only(home=home)
    click.echo(remote_interrupt(remote, thread, turn_id, discard=discard))


def _local_refusal(home: Path | None, thread: str, there: str) -> NoReturn:
    """Why a turn in this home cannot be reached from here, in one line."""
    from kun.app.lookup import resolve_thread_id
    from kun.store.errors import ThreadLocked
    from kun.store.lock import lock_thread
    from kun.store.paths import lock_path, log_path, resolve_home
    from kun.store.replay import replay_log

    root = resolve_home(home)
    thread_id = resolve_thread_id(root, thread)
    state = replay_log(log_path(root, thread_id), mode="tolerant")
    open_turn = next((t for t in reversed(state.turns) if not t.settled), None)
    if open_turn is None:
        raise NoRunningTurn(thread_id)
    try:
        fd = lock_thread(thread_id, lock_path(root, thread_id))
    except ThreadLocked as exc:
        holder = "another process" if exc.holder_pid is None else f"process {exc.holder_pid}"
        raise UserMistake(
            f"turn {open_turn.turn_id} of thread {thread_id} runs in {holder}, which alone "
            f"can reach it: {there} (a turn run by kun serve: kun --server URL ...)"
        ) from None
    os.close(fd)
    raise UserMistake(
        f"turn {open_turn.turn_id} of thread {thread_id} was left open by a kun that "
        "stopped: nothing runs it; kun reconcile settles it"
    )
