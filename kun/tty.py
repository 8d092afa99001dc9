"""The controlling terminal: asking there, and the signals that end a turn.

Prompts are read from ``/dev/tty``, not stdin, so ``kun run ... | tee log``
still asks at the keyboard; a process without a controlling terminal (CI,
cron, ``setsid``) or with neither stdin nor stdout on one (a script) asks
nothing and denies. A prompt is a prompt_toolkit prompt in raw mode, so
Ctrl-C, Esc and Ctrl-D are keys that answer at once, never a signal that
waits for Enter nor an ``EOFError`` traceback.

SIGINT, SIGTERM and SIGHUP are one thing to a running turn: stop it and
record ``turn_aborted``. After SIGHUP the terminal is gone; the standard
streams are pointed at ``/dev/null`` so that recording the abort never
fails on a write to a dead terminal.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Awaitable, Callable
from contextlib import suppress
from typing import Any, TextIO

import anyio
from anyio.abc import TaskStatus

from kun.terminal import Reply

__all__ = ["HANDLED_SIGNALS", "TtyPrompter", "detach_from_terminal", "open_terminal", "watch"]

HANDLED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def open_terminal() -> TextIO | None:
    """The controlling terminal, when the user is at one (stdin or stdout is
    a terminal) and it can be opened; else ``None``. One descriptor, opened
    for reading and writing: prompt_toolkit reads its ``fileno()``."""
    if not (_isatty(sys.stdin) or _isatty(sys.stdout)):
        return None
    try:
        fd = os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY)
    except OSError:
        return None
    return os.fdopen(fd, "w", encoding="utf-8", errors="replace", buffering=1)


def _isatty(stream: TextIO | None) -> bool:
    try:
        return stream is not None and stream.isatty()
    except (OSError, ValueError):
        return False


def cancel_keys(*, eager_escape: bool = True) -> Any:
    """Key bindings that end a prompt at once: Ctrl-C and Esc interrupt,
    Ctrl-D (even on a non-empty line) is end of input."""
    from prompt_toolkit.key_binding import KeyBindings

    keys = KeyBindings()

    @keys.add("c-c")
    def _interrupt(event: Any) -> None:
        event.app.exit(result=Reply("interrupt"))

    @keys.add("escape", eager=eager_escape)
    def _escape(event: Any) -> None:
        event.app.exit(result=Reply("interrupt"))

    @keys.add("c-d")
    def _eof(event: Any) -> None:
        event.app.exit(result=Reply("eof"))

    return keys


class TtyPrompter:
    """Asks one line at a time on the terminal ``tty`` (see the module
    docstring); prompt_toolkit is imported on the first question."""

    def __init__(self, tty: TextIO) -> None:
        self.tty = tty

    async def prompt(self, message: str) -> Reply:
        from prompt_toolkit import PromptSession
        from prompt_toolkit.input import create_input
        from prompt_toolkit.output import create_output

        session: Any = PromptSession(
            input=create_input(stdin=self.tty),
            output=create_output(stdout=self.tty),
            key_bindings=cancel_keys(),
            erase_when_done=False,
        )
        try:
            result = await session.prompt_async(
                message, handle_sigint=False, set_exception_handler=False
            )
        except EOFError:
            return Reply("eof")
        except KeyboardInterrupt:
            return Reply("interrupt")
        return result if isinstance(result, Reply) else Reply("text", str(result))


async def watch(
    on_signal: Callable[[int], Awaitable[None]],
    *,
    task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Call ``on_signal`` for each SIGINT, SIGTERM and SIGHUP until
    cancelled (start it with ``task_group.start``: the handlers are in
    place when it returns)."""
    with anyio.open_signal_receiver(*HANDLED_SIGNALS) as signals:
        task_status.started()
        async for signum in signals:
            if signum == signal.SIGHUP:
                detach_from_terminal()
            await on_signal(signum)


def detach_from_terminal() -> None:
    """Point stdin, stdout and stderr at ``/dev/null`` (the terminal hung up)."""
    with suppress(OSError):
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.close(null)
