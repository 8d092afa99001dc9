"""Steering or interrupting a turn that another process on this machine
runs (a ``kun run`` or a session): only that process can reach it, on the
thread's control socket (:mod:`kun.runtime.control_channel`), and it
answers as the in-process call would. Nobody answering there is one
refusal that says why: a live process that takes no steering from here
(where to type instead), or a turn a stopped kun left open (``kun
reconcile`` settles it)."""

from __future__ import annotations

import os
from pathlib import Path

import anyio

from kun.app.local_errors import TurnUnreachable
from kun.errors import UserMistake
from kun.runtime.control_channel import (
    NO_RUNNING_TURN,
    SOCKET_WAIT_SECONDS,
    Answer,
    Interrupt,
    Steer,
    ask,
)
from kun.runtime.errors import TurnNotRunning
from kun.store.errors import ThreadLocked
from kun.store.lock import lock_thread
from kun.store.paths import lock_path

__all__ = ["INTERRUPT_THERE", "STEER_THERE", "reach"]

STEER_THERE = "steer it by typing in its session while the turn runs"
INTERRUPT_THERE = "interrupt it there (Esc or Ctrl-C)"


async def reach(
    home: Path, thread_id: str, turn_id: str, request: Steer | Interrupt, there: str
) -> Answer:
    """The answer of the process running turn ``turn_id`` (open in the
    log, not run here); ``there``: what to do in that process instead.
    Nobody answering while a live process holds the thread is a socket
    not bound yet (it binds beside the turn shown): the ask is retried for
    a moment before the refusal."""
    answer = await ask(home, thread_id, request)
    if answer is None:
        why, live = await anyio.to_thread.run_sync(_unreached, home, thread_id, turn_id, there)
        if live:
            answer = await ask(home, thread_id, request, wait=SOCKET_WAIT_SECONDS)
        if answer is None:
            raise why
    if answer.error is not None:
        if answer.error.code == NO_RUNNING_TURN:
            raise TurnNotRunning(thread_id, turn_id)
        raise UserMistake(f"{answer.error.message} ({answer.error.code})")
    return answer


def _unreached(home: Path, thread_id: str, turn_id: str, there: str) -> tuple[UserMistake, bool]:
    """Why the open turn cannot be reached from here, and whether a live
    process runs it."""
    try:
        fd = lock_thread(thread_id, lock_path(home, thread_id))
    except ThreadLocked as exc:
        holder = "another process" if exc.holder_pid is None else f"process {exc.holder_pid}"
        return TurnUnreachable(
            f"turn {turn_id} of thread {thread_id} runs in {holder}, which alone "
            f"can reach it: {there} (a turn run by kun serve: kun --server URL ...)"
        ), True
    os.close(fd)
    stopped = TurnUnreachable(
        f"turn {turn_id} of thread {thread_id} was left open by a kun that "
        "stopped: nothing runs it; kun reconcile settles it"
    )
    stopped.suggests = ("reconcile",)
    return stopped, False
