"""Tool subprocesses that die with kun, even when kun is SIGKILLed.

A tool's command runs in a new session, so it and everything it starts form
one process group that kun kills on a timeout or an abort. That does not
cover kun's own death: a SIGKILLed kun runs no cleanup, and the group would
go on changing files after the next start-up's reconciliation called the
call's outcome "unknown".

Why not ``PR_SET_PDEATHSIG``: it reaches only the process that set it (it is
cleared on ``fork``), so a command's children and background jobs would
survive; and it needs a ``preexec_fn``, which is unsafe in a threaded
process. Why not a subreaper: the subreaper would be kun itself, whose death
hands the orphans to init all the same. Why not a group recorded in the log
and killed at the next start-up: there may be no next start-up for hours.

So each command gets a **guard**: a tiny ``sh`` in a session of its own
(terminal signals do not reach it, and it ignores the rest), reading a pipe
whose only writer is kun. When kun dies the kernel closes that pipe, the
guard reads end-of-file and kills the command's whole group: ``SIGTERM``
first, then ``SIGKILL`` :data:`GRACE_S` later. (The grace lets a shell run
its exit traps: a login shell killed outright in the middle of its profile
can leave a lock behind, such as pyenv's rehash lock, that stalls every
later login shell.) When the call
ends normally kun writes ``release`` first and the guard exits without
killing: a background job started on purpose outlives the call, as the
``bash`` contract says.

The guard can only be told the group's id once the command exists, so the
command starts behind a **gate**: it is spawned as ``sh`` waiting to read
``go`` from another pipe from kun (its standard input, ``/dev/null`` once
the gate opens), and ``exec``\\ s the real command only
then. kun opens the gate after the guard is running. If kun dies before
that, the gate reads end-of-file and the command never runs; after it, the
guard is there. No moment is left where a command runs unguarded.

Cost: two ``sh`` processes per call (about a millisecond each). Both use
only POSIX ``sh`` features.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import Process

SH = "/bin/sh"
REAP_TIMEOUT_S = 5.0

GRACE_S = 1
"""Seconds between the guard's ``SIGTERM`` and its ``SIGKILL``."""

_GUARD = (
    'trap "" INT TERM HUP QUIT PIPE; read -r word; [ "$word" = release ] && exit 0; '
    f'kill -s TERM -- "-$1" 2>/dev/null && sleep {GRACE_S} && kill -s KILL -- "-$1" 2>/dev/null'
)


_GATE = 'read -r go && [ "$go" = go ] || exit 125; exec "$@" </dev/null'


@dataclass
class Guarded:
    """A running command (``process``, the leader of its own process group)
    and the guard that kills the group if kun dies."""

    process: Process
    guard: Process
    guard_fd: int

    async def close(self, *, kill: bool) -> None:
        """Kill the command's group if ``kill``, release the guard, and reap
        both (within :data:`REAP_TIMEOUT_S`). Shielded from cancellation: a
        call that is being aborted still cleans up."""
        with anyio.CancelScope(shield=True):
            if kill:
                await stop_group(self.process)
            with suppress(OSError):
                os.write(self.guard_fd, b"release\n")
            with suppress(OSError):
                os.close(self.guard_fd)
            with anyio.move_on_after(REAP_TIMEOUT_S):
                await self.guard.wait()
                await self.process.wait()


STOP_GRACE_S = 0.3
"""How long a command's group has, after ``SIGTERM``, before ``SIGKILL``
when kun stops it (a timeout or an abort): enough for a shell's exit traps,
well inside the second an interrupt may take."""


async def stop_group(process: Process) -> None:
    """Stop the group ``process`` leads: ``SIGTERM``, then ``SIGKILL`` once
    the leader has exited or :data:`STOP_GRACE_S` has passed. The grace is
    for the same reason as the guard's: a login shell killed outright in the
    middle of its profile can leave a lock behind (pyenv's rehash lock) that
    stalls every later login shell for a minute."""
    signal_group(process.pid, signal.SIGTERM)
    with anyio.move_on_after(STOP_GRACE_S):
        await process.wait()
    signal_group(process.pid, signal.SIGKILL)


def signal_group(pgid: int, signum: int) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


async def spawn_guarded(
    argv: Sequence[str],
    *,
    cwd: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    stdout: int | None = None,
    stderr: int | None = None,
    pass_fds: Sequence[int] = (),
) -> Guarded:
    """Start ``argv`` in a new session behind a gate, start its guard, then
    open the gate. The command's standard input is ``/dev/null`` (the gate
    is its standard input until it opens). The caller must
    :meth:`Guarded.close` the result."""
    gate_read, gate_write = os.pipe()
    try:
        process = await _open(
            [SH, "-c", _GATE, "kun-gate", *argv],
            cwd=cwd,
            env=env,
            stdin=gate_read,
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,
            pass_fds=pass_fds,
        )
    finally:
        os.close(gate_read)
    try:
        guard, guard_fd = await _start_guard(process.pid)
    except BaseException:
        os.close(gate_write)
        with anyio.CancelScope(shield=True):
            await process.wait()
        raise
    with suppress(OSError):
        os.write(gate_write, b"go\n")
    os.close(gate_write)
    return Guarded(process, guard, guard_fd)


async def _start_guard(pgid: int) -> tuple[Process, int]:
    guard_read, guard_write = os.pipe()
    try:
        guard = await _open(
            [SH, "-c", _GUARD, "kun-guard", str(pgid)],
            stdin=guard_read,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
    except BaseException:
        os.close(guard_write)
        raise
    finally:
        os.close(guard_read)
    return guard, guard_write


async def _open(argv: list[str], **kwargs: Any) -> Process:
    """``anyio.open_process``, shielded: a spawn half done when an abort
    arrives would leave a process nobody reaps."""
    with anyio.CancelScope(shield=True):
        process = await anyio.open_process(argv, **kwargs)
    return process
