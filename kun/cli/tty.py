"""The controlling terminal: asking there, and the signals that end a turn.

Prompts are asked at the keyboard even when output is piped: read from
stdin when it is a terminal, else from the controlling terminal
(``/dev/tty``), and drawn on the first of stdout, stderr or ``/dev/tty``
that is a terminal, so ``kun run ... | tee log`` still asks. A process
with no standard stream on a terminal (CI, cron, a script) asks nothing
and denies. A prompt is a prompt_toolkit prompt in raw mode, so
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
from dataclasses import dataclass
from typing import Any, TextIO

import anyio
from anyio.abc import TaskStatus

from kun.cli.terminal import Reply

__all__ = [
    "HANDLED_SIGNALS",
    "Terminal",
    "TtyPrompter",
    "detach_from_terminal",
    "open_terminal",
    "watch",
]

HANDLED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@dataclass
class Terminal:
    """Where prompts are read (``input``, with a ``fileno``) and drawn."""

    input: TextIO
    output: TextIO
    owned: TextIO | None = None

    def close(self) -> None:
        if self.owned is not None:
            self.owned.close()


def open_terminal() -> Terminal | None:
    """The terminal to ask on, when the user is at one: read from stdin if
    it is a terminal, else from ``/dev/tty``; draw on stdout if it is a
    terminal, else on stderr, else on ``/dev/tty``. ``None`` when no
    standard stream is a terminal, or the controlling one cannot be opened."""
    streams = (sys.stdin, sys.stdout, sys.stderr)
    if not any(_isatty(s) for s in streams):
        return None
    owned = None
    if _isatty(sys.stdin):
        reader: TextIO = sys.stdin
    else:
        owned = _controlling_terminal()
        if owned is None:
            return None
        reader = owned
    writer = next((s for s in streams[1:] if _isatty(s)), None)
    if writer is None:
        owned = owned or _controlling_terminal()
        if owned is None:
            return None
        writer = owned
    return Terminal(reader, writer, owned)


def _controlling_terminal() -> TextIO | None:
    """``/dev/tty``, one descriptor for reading and writing."""
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
    """Asks one line at a time on ``terminal`` (see the module docstring);
    prompt_toolkit is imported on the first question."""

    def __init__(self, terminal: Terminal) -> None:
        self.terminal = terminal

    async def prompt(self, message: str) -> Reply:
        from prompt_toolkit import PromptSession
        from prompt_toolkit.input import create_input
        from prompt_toolkit.output import create_output

        session: Any = PromptSession(
            input=create_input(stdin=self.terminal.input),
            output=create_output(stdout=self.terminal.output),
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
