"""``kun steer THREAD TEXT`` and ``kun interrupt THREAD``: reach a turn that
is running, from another terminal or a script.

A turn runs inside the process that started it, and only that process can
steer or stop it: a ``kun serve`` (with ``--server URL``), or a ``kun run``
or ``kun chat`` on this machine, reached on the thread's control socket
(:mod:`kun.app.reaching`). The text is queued for the model's next step,
or the turn is stopped and recorded as ``turn_aborted``. Without
``--turn`` the turn is the thread's last one that has not settled. Every
refusal is one line and exit status 1; the lines that say it worked are
the same wherever the thread is held.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from kun.cli.options import home_option
from kun.cli.reading import on_kun
from kun.errors import UserMistake

if TYPE_CHECKING:
    from kun.app.interface import Kun

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

    async def body(kun: Kun) -> str:
        thread_id, turn = await _running(kun, thread, turn_id)
        done = await kun.steer(thread_id, turn, message)
        return steered_line(done.thread_id, done.turn_id)

    click.echo(on_kun(home, body))


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

    async def body(kun: Kun) -> str:
        thread_id, turn = await _running(kun, thread, turn_id)
        settled = await kun.interrupt(thread_id, turn, discard=discard)
        return interrupted_line(thread_id, settled.turn_id, settled.status)

    click.echo(on_kun(home, body))


async def _running(kun: Kun, thread: str, turn_id: str | None) -> tuple[str, str]:
    """The thread's full id and the turn to reach: ``turn_id``, else the
    last turn the log shows unsettled."""
    if turn_id is not None:
        return await kun.resolve_thread(thread), turn_id
    state = await kun.thread(thread)
    open_turn = state.running_turn
    if open_turn is None:
        raise NoRunningTurn(state.thread_id)
    return state.thread_id, open_turn.turn_id
