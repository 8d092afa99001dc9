"""``kun steer THREAD TEXT`` and ``kun interrupt THREAD``: reach a turn that
is running, from another terminal or a script.

A turn runs inside the process that started it, and only that process can
steer or stop it. With ``--server URL`` that process is a ``kun serve``,
which takes both over HTTP (:mod:`kun.cli.remote_steering`): the text is
queued for the model's next step, or the turn is stopped and recorded as
``turn_aborted``. Without a server the turn runs in a ``kun run`` or
``kun chat`` on this machine, which takes both on the thread's control
socket (:mod:`kun.runtime.control_channel`), with the same answers. When
nothing answers there the command says why in one line: no running turn,
a process that takes no steering from here (which one, where to type
instead), or a turn a stopped kun left open (``kun reconcile`` settles it).
Every refusal is one line and exit status 1; the lines that say it worked
are the same wherever the thread is held.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from kun.cli.options import home_option, pasteable
from kun.cli.remote import local_only, remote_target
from kun.errors import UserMistake

if TYPE_CHECKING:
    from kun.runtime.control_channel import Interrupt, Steer

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
        from kun.runtime.control_channel import Steer

        there = "steer it by typing in its session while the turn runs"
        click.echo(_local(home, thread, Steer(text=message, turn_id=turn_id), there))
        return
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
        from kun.runtime.control_channel import Interrupt

        request = Interrupt(discard=discard, turn_id=turn_id)
        click.echo(_local(home, thread, request, "interrupt it there (Esc or Ctrl-C)"))
        return
    from kun.cli.remote_steering import remote_interrupt

    local_only(home=home)
    click.echo(remote_interrupt(remote, thread, turn_id, discard=discard))


def _local(home: Path | None, thread: str, request: Steer | Interrupt, there: str) -> str:
    """Ask the process running the thread's turn, on its control socket;
    the line to print, or its refusal (or, nobody answering, why) raised.
    Nobody answering while the log shows a turn that a live process runs
    is a socket not bound yet (it binds beside the shown turn): the ask is
    retried for a moment before the refusal; any other case answers at once."""
    from functools import partial

    import anyio

    from kun.app.lookup import resolve_thread_id
    from kun.runtime.control_channel import NO_RUNNING_TURN, SOCKET_WAIT_SECONDS, Steer, ask
    from kun.store.paths import resolve_home

    root = resolve_home(home)
    thread_id = resolve_thread_id(root, thread)
    answer = anyio.run(ask, root, thread_id, request)
    if answer is None and _unreached(root, thread_id, there)[1]:
        answer = anyio.run(partial(ask, root, thread_id, request, wait=SOCKET_WAIT_SECONDS))
    if answer is None:
        raise _unreached(root, thread_id, there)[0]
    if answer.error is not None:
        if answer.error.code == NO_RUNNING_TURN:
            raise NoRunningTurn(thread_id)
        raise UserMistake(f"{answer.error.message} ({answer.error.code})")
    turn_id = answer.turn_id or ""
    if isinstance(request, Steer):
        return steered_line(thread_id, turn_id)
    return interrupted_line(thread_id, turn_id, answer.status or "aborted")


def _unreached(root: Path, thread_id: str, there: str) -> tuple[UserMistake, bool]:
    """Why a turn in this home cannot be reached from here, in one line,
    and whether a live process runs it (its socket may be moments away)."""
    from kun.store.errors import ThreadLocked
    from kun.store.lock import lock_thread
    from kun.store.paths import lock_path, log_path
    from kun.store.replay import replay_log

    state = replay_log(log_path(root, thread_id), mode="tolerant")
    open_turn = next((t for t in reversed(state.turns) if not t.settled), None)
    if open_turn is None:
        return NoRunningTurn(thread_id), False
    try:
        fd = lock_thread(thread_id, lock_path(root, thread_id))
    except ThreadLocked as exc:
        holder = "another process" if exc.holder_pid is None else f"process {exc.holder_pid}"
        return UserMistake(
            f"turn {open_turn.turn_id} of thread {thread_id} runs in {holder}, which alone "
            f"can reach it: {there} (a turn run by kun serve: kun --server URL ...)"
        ), True
    os.close(fd)
    return UserMistake(
        f"turn {open_turn.turn_id} of thread {thread_id} was left open by a kun that "
        f"stopped: nothing runs it; {pasteable('reconcile')} settles it"
    ), False
