"""The session's prompt read in a loop (:class:`PromptLoop`): what a line,
Esc, Ctrl-C and Ctrl-D do with it, and the prompt's look. The session
(:mod:`kun.chat.session`) says how it starts, steers and interrupts a turn
and runs a command, the same whichever adapter it speaks to."""

from __future__ import annotations

import time

from kun.chat.input import ChatInput
from kun.chat.view import ChatSink
from kun.cli.options import explained
from kun.cli.terminal import Tone
from kun.errors import KunError

__all__ = ["PromptLoop"]

_FRAMES = "|/-\\"


class PromptLoop:
    input: ChatInput
    sink: ChatSink
    thread_id: str | None
    turn_id: str | None
    _closing: bool

    def say(self, text: str, tone: Tone = "plain") -> None:
        self.sink.line(text, tone)

    def greet(self, where: str, policy: str) -> None:
        """The session's first line: what it runs on, and the keys."""
        self.say(
            f"kun · {where} · approval {policy} · /help for commands · Esc interrupts · "
            "Ctrl-D leaves",
            "dim",
        )

    def close(self) -> None:
        self._closing = True
        self.input.leave()

    async def prompt_until_closed(self) -> None:
        """Read and act until the user leaves; a turn still running then
        is interrupted."""
        while not self._closing:
            reply = await self.input.read(self._message, self._toolbar)
            if reply.kind == "eof":
                self.close()
            elif reply.kind == "interrupt":
                await self._interrupted(reply.text)
            elif reply.text.strip():
                await self._send(reply.text.strip())
        if self.turn_id is not None:
            await self._interrupt()

    async def _send(self, text: str) -> None:
        try:
            if text.startswith("/"):
                await self._command(text)
            elif self.turn_id is not None and self.thread_id is not None:
                await self._steer(self.thread_id, self.turn_id, text)
            else:
                await self._start(text)
        except KunError as exc:
            self.say(explained(exc), "error")

    async def _interrupted(self, key: str) -> None:
        if self.turn_id is not None:
            await self._interrupt()
        elif key == "ctrl-c":
            self.say("(Ctrl-D or /quit leaves)", "dim")

    def _message(self) -> str:
        return "steer> " if self.turn_id is not None else "> "

    def _toolbar(self) -> str:
        if self.turn_id is not None:
            frame = _FRAMES[int(time.monotonic() * 10) % len(_FRAMES)]
            status = self.sink.status or "working"
            return f" {frame} {status} · Enter steers · Esc interrupts"
        return self._idle_toolbar()

    # -- what each session does -------------------------------------------------

    def _idle_toolbar(self) -> str:
        raise NotImplementedError

    async def _command(self, line: str) -> None:
        raise NotImplementedError

    async def _start(self, text: str) -> None:
        raise NotImplementedError

    async def _steer(self, thread_id: str, turn_id: str, text: str) -> None:
        raise NotImplementedError

    async def _interrupt(self) -> None:
        raise NotImplementedError
