"""What the user types in a session: one prompt that is always there.

The main prompt stays up while a turn runs, so typing steers the turn and
Esc interrupts it; output is printed above it (``patch_stdout``). A
question from the turn (an approval, the model's question) takes the prompt
over: the main prompt steps aside, keeping what was being typed, the
question is asked, and the main prompt comes back with the draft.

Keys at the main prompt:

* Enter sends; a line ending in ``\\`` continues on the next line instead;
  Alt-Enter (Esc then Enter) inserts a newline; pasted text keeps its
  newlines (bracketed paste). Ctrl-J sends, like Enter: it is what a
  terminal not yet in raw mode turns a typed-ahead Enter into;
* Esc is ``interrupt`` (it stops a running turn); Ctrl-C clears what was
  typed, or on an empty line is ``interrupt`` too;
* Ctrl-D on an empty line is ``eof`` (leave the session);
* Up and Down walk the history, which is kept across sessions in
  ``$KUN_HOME/history``.

At a question (:func:`kun.cli.tty.cancel_keys`): Ctrl-C and Esc are
``interrupt``, Ctrl-D is ``eof``, at once.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from kun.cli.colors import color_allowed
from kun.cli.terminal import Reply
from kun.cli.tty import cancel_keys

__all__ = ["HISTORY_NAME", "ChatInput"]

HISTORY_NAME = "history"
ESCAPE_WAIT = 0.3
"""Seconds an Esc waits for a following key (Esc Enter is a newline)."""


@dataclass
class _Question:
    message: str
    done: anyio.Event = field(default_factory=anyio.Event)
    reply: Reply = field(default_factory=lambda: Reply("interrupt"))


class _StepAside:
    """The main prompt's result when a question takes the prompt over."""


def _main_keys() -> Any:
    from prompt_toolkit.filters import Condition
    from prompt_toolkit.key_binding import KeyBindings

    keys = KeyBindings()

    @keys.add("enter")
    @keys.add("c-j")
    def _enter(event: Any) -> None:
        buffer = event.current_buffer
        if (
            buffer.document.text_before_cursor.endswith("\\")
            and buffer.document.is_cursor_at_the_end
        ):
            buffer.delete_before_cursor(1)
            buffer.insert_text("\n")
        else:
            buffer.validate_and_handle()

    @keys.add("escape", "enter")
    def _newline(event: Any) -> None:
        event.current_buffer.insert_text("\n")

    @keys.add("escape")
    def _escape(event: Any) -> None:
        event.app.exit(result=Reply("interrupt", "esc"))

    @keys.add("c-c")
    def _ctrl_c(event: Any) -> None:
        buffer = event.current_buffer
        if buffer.text:
            buffer.reset()
        else:
            event.app.exit(result=Reply("interrupt", "ctrl-c"))

    empty = Condition(lambda: not _current_text())

    @keys.add("c-d", filter=empty)
    def _eof(event: Any) -> None:
        event.app.exit(result=Reply("eof"))

    return keys


def _current_text() -> str:
    from prompt_toolkit.application import get_app

    return str(get_app().current_buffer.text)


class ChatInput:
    """The session's prompt (see the module docstring); also the session's
    :class:`~kun.cli.terminal.Prompter` for the turn's questions."""

    def __init__(self, home: Path) -> None:
        from prompt_toolkit import PromptSession
        from prompt_toolkit.history import FileHistory
        from prompt_toolkit.output import ColorDepth

        home.mkdir(parents=True, exist_ok=True)
        self._main: Any = PromptSession(
            history=FileHistory(str(home / HISTORY_NAME)),
            key_bindings=_main_keys(),
            multiline=True,
            prompt_continuation=lambda width, line, wrap: "." * (width - 1) + " ",
            color_depth=None if color_allowed() else ColorDepth.DEPTH_1_BIT,
        )
        self._main.app.ttimeoutlen = 0.05
        self._main.app.timeoutlen = ESCAPE_WAIT
        self._questions: deque[_Question] = deque()
        self._draft = ""

    async def read(self, message: Callable[[], str], toolbar: Callable[[], str]) -> Reply:
        """The next line the user sends at the main prompt, or the key that
        ended it; questions asked meanwhile are served first."""
        while True:
            while self._questions:
                await self._serve(self._questions[0])
                self._questions.popleft()
            result = await self._main.prompt_async(
                message,
                default=self._draft,
                bottom_toolbar=toolbar,
                refresh_interval=0.1,
                handle_sigint=False,
                set_exception_handler=False,
            )
            if isinstance(result, _StepAside):
                continue
            self._draft = ""
            return result if isinstance(result, Reply) else Reply("text", str(result))

    async def prompt(self, message: str) -> Reply:
        """Ask ``message`` (a question from the turn) in place of the main prompt."""
        question = _Question(message)
        self._questions.append(question)
        self._step_aside()
        await question.done.wait()
        return question.reply

    def refresh(self) -> None:
        """Redraw the prompt (its message and toolbar changed)."""
        app = self._main.app
        if app.is_running:
            app.invalidate()

    def leave(self) -> None:
        """End the main prompt (the session is closing)."""
        if self._running():
            self._main.app.exit(result=Reply("eof"))

    def _step_aside(self) -> None:
        if self._running():
            self._draft = self._main.default_buffer.text
            self._main.app.exit(result=_StepAside())

    def _running(self) -> bool:
        app = self._main.app
        return bool(app.is_running and app.future is not None and not app.future.done())

    async def _serve(self, question: _Question) -> None:
        from prompt_toolkit import PromptSession

        session: Any = PromptSession(key_bindings=cancel_keys())
        try:
            result = await session.prompt_async(
                question.message, handle_sigint=False, set_exception_handler=False
            )
            question.reply = result if isinstance(result, Reply) else Reply("text", str(result))
        except (EOFError, KeyboardInterrupt):
            question.reply = Reply("eof")
        finally:
            question.done.set()
