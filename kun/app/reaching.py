"""Reach a turn that another process on this machine runs (a ``kun run``
or a session), on the thread's control socket
(:mod:`kun.runtime.control_channel`): steer it or interrupt it, as ``kun
serve`` does over HTTP for the turns it runs.

Only the process running a turn can steer or stop it. When nothing answers
there, the refusal says why in one line: no running turn, a process that
takes no steering from here (which one, where to type instead), or a turn
a stopped kun left open (``kun reconcile`` settles it).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from kun.errors import UserMistake

__all__ = ["NoRunningTurn", "Reached", "reach"]

_THERE = {
    "steer": "steer it by typing in its session while the turn runs",
    "interrupt": "interrupt it there (Esc or Ctrl-C)",
}


class NoRunningTurn(UserMistake):
    def __init__(self, thread_id: str) -> None:
        super().__init__(f"thread {thread_id} has no running turn")
        self.thread_id = thread_id


class Reached:
    """The turn reached and, for an interrupt, its status once settled."""

    def __init__(self, turn_id: str, status: str) -> None:
        self.turn_id = turn_id
        self.status = status


async def reach(
    home: Path,
    thread_id: str,
    turn_id: str | None,
    *,
    steer: str | None = None,
    discard: bool = False,
) -> Reached:
    """Steer with ``steer`` (or, ``None``, interrupt) the turn ``turn_id``
    (``None``: the running one) of ``thread_id`` that a process of this
    machine runs. Nobody answering while the log shows a turn that a live
    process runs is a socket not bound yet (it binds beside the shown turn):
    the ask is retried for a moment before the refusal; any other case
    answers at once."""
    import anyio

    from kun.runtime.control_channel import (
        NO_RUNNING_TURN,
        SOCKET_WAIT_SECONDS,
        Interrupt,
        Steer,
        ask,
    )

    request: Steer | Interrupt
    if steer is not None:
        request = Steer(text=steer, turn_id=turn_id)
    else:
        request = Interrupt(discard=discard, turn_id=turn_id)
    op: Literal["steer", "interrupt"] = "steer" if steer is not None else "interrupt"
    answer = await ask(home, thread_id, request)
    if answer is None:
        why, live = await anyio.to_thread.run_sync(_unreached, home, thread_id, op)
        if live:
            answer = await ask(home, thread_id, request, wait=SOCKET_WAIT_SECONDS)
        if answer is None:
            raise why
    if answer.error is not None:
        if answer.error.code == NO_RUNNING_TURN:
            raise NoRunningTurn(thread_id)
        raise UserMistake(f"{answer.error.message} ({answer.error.code})")
    return Reached(answer.turn_id or "", answer.status or "aborted")


def _unreached(
    home: Path, thread_id: str, op: Literal["steer", "interrupt"]
) -> tuple[UserMistake, bool]:
    """Why a turn in this home cannot be reached from here, in one line,
    and whether a live process runs it (its socket may be moments away)."""
    from kun.store.errors import ThreadLocked
    from kun.store.lock import lock_thread
    from kun.store.paths import lock_path, log_path
    from kun.store.replay import replay_log

    state = replay_log(log_path(home, thread_id), mode="tolerant")
    open_turn = next((t for t in reversed(state.turns) if not t.settled), None)
    if open_turn is None:
        return NoRunningTurn(thread_id), False
    try:
        fd = lock_thread(thread_id, lock_path(home, thread_id))
    except ThreadLocked as exc:
        holder = "another process" if exc.holder_pid is None else f"process {exc.holder_pid}"
        return UserMistake(
            f"turn {open_turn.turn_id} of thread {thread_id} runs in {holder}, which alone "
            f"can reach it: {_THERE[op]} (a turn run by kun serve: kun --server URL ...)"
        ), True
    os.close(fd)
    mistake = UserMistake(
        f"turn {open_turn.turn_id} of thread {thread_id} was left open by a kun that "
        "stopped: nothing runs it; kun reconcile settles it"
    )
    mistake.suggests = ("reconcile",)
    return mistake, False
