"""Showing a live turn in a terminal, and answering its questions there.

``LiveView`` follows the thread's events as they are appended and says what
they mean: assistant text as it streams, reasoning as a single line, tool
calls and their results in one or two lines each, warnings, the outcome and
the usage. *How* it is drawn is a :class:`Sink`'s business: ``PlainSink``
writes plain lines to a stream (``kun run``: pipes, logs, a terminal with a
spinner); the interactive session has its own (:mod:`kun.chat.view`).

Approvals and questions are asked through a :class:`Prompter`; without one
they are denied and cancelled, so an unattended run never hangs. At a
prompt, Ctrl-C and Esc interrupt the turn and Ctrl-D denies (or cancels the
question) and interrupts: each is one line, at once.
"""

from __future__ import annotations

from contextlib import suppress
from dataclasses import dataclass
from typing import Literal, Protocol, TextIO

import anyio
import click

from kun.contracts import events as ev
from kun.contracts.items import AssistantText, ErrorItem, ToolCall, ToolResult
from kun.domain.transcript import format_usage
from kun.runtime.errors import AnswerConflict, TurnNotRunning
from kun.runtime.service import TurnService

__all__ = ["LiveView", "PlainSink", "Prompter", "Reply", "Sink", "Tone"]

Tone = Literal["plain", "dim", "tool", "warn", "error", "good"]
"""What a line means, for a sink to colour."""

_CLICK_STYLES: dict[Tone, dict[str, object]] = {
    "plain": {},
    "dim": {"dim": True},
    "tool": {"fg": "cyan"},
    "warn": {"fg": "yellow"},
    "error": {"fg": "red"},
    "good": {"fg": "green"},
}


@dataclass(frozen=True)
class Reply:
    """What the user did at a prompt: typed a line (``text``), or pressed
    Ctrl-C / Esc (``interrupt``) or Ctrl-D (``eof``)."""

    kind: Literal["text", "interrupt", "eof"]
    text: str = ""


class Prompter(Protocol):
    async def prompt(self, message: str) -> Reply: ...


class Sink(Protocol):
    """Where a live view draws. ``line`` always starts on a fresh line and
    clears whatever transient status (a spinner) is showing first."""

    def text(self, item_id: str, fragment: str) -> None: ...

    def text_done(self, item_id: str, text: str) -> None: ...

    def line(self, text: str, tone: Tone = "plain") -> None: ...

    def waiting(self, on: bool) -> None: ...

    async def animate(self) -> None: ...


class PlainSink:
    """Plain lines on ``out``; on a terminal (``spinner``), a spinner while
    the model thinks, cleared before anything else is written."""

    def __init__(self, out: TextIO, *, spinner: bool = False, color: bool = False) -> None:
        self.out = out
        self.spinner = spinner
        self.color = color
        self._mid_line = False
        self._waiting = False
        self._spinning = False

    def text(self, item_id: str, fragment: str) -> None:
        self._clear_spinner()
        self.out.write(fragment)
        self.out.flush()
        self._mid_line = not fragment.endswith("\n")

    def text_done(self, item_id: str, text: str) -> None:
        """Nothing to do: the next line starts on a fresh line anyway."""

    def line(self, text: str, tone: Tone = "plain") -> None:
        self._clear_spinner()
        if self._mid_line:
            self.out.write("\n")
            self._mid_line = False
        if self.color and tone != "plain":
            text = click.style(text, **_CLICK_STYLES[tone])  # type: ignore[arg-type]
        self.out.write(text + "\n")
        self.out.flush()

    def waiting(self, on: bool) -> None:
        self._waiting = on
        if not on:
            self._clear_spinner()

    async def animate(self) -> None:
        if not self.spinner:
            return
        frames = "|/-\\"
        tick = 0
        try:
            while True:
                await anyio.sleep(0.1)
                if self._waiting:
                    prefix = "\n" if self._mid_line else ""
                    self._mid_line = False
                    self.out.write(f"{prefix}\r{frames[tick % 4]} waiting for the model")
                    self.out.flush()
                    self._spinning = True
                    tick += 1
        finally:
            self._clear_spinner()

    def _clear_spinner(self) -> None:
        if self._spinning:
            self.out.write("\r\x1b[2K")
            self.out.flush()
            self._spinning = False


class LiveView:
    def __init__(
        self,
        service: TurnService,
        thread_id: str,
        sink: Sink,
        prompter: Prompter | None = None,
    ) -> None:
        self.service = service
        self.thread_id = thread_id
        self.sink = sink
        self.prompter = prompter
        self._thinking: set[str] = set()

    def note(self, text: str, tone: Tone = "dim") -> None:
        """A line from outside the event stream (a retry, an interrupt)."""
        self.sink.line(text, tone)

    async def follow(self, after: int, turn_id: str) -> None:
        """Show the turn's events until it settles; the sink animates while
        the model is thinking (after a request is sent, before its first
        output)."""
        async with anyio.create_task_group() as tg:
            tg.start_soon(self.sink.animate)
            async for event in self.service.recorder.subscribe(self.thread_id, after=after):
                if event.turn_id not in (None, turn_id):
                    continue
                self._note_waiting(event)
                await self.show(event)
                if isinstance(event, ev.TurnCompleted | ev.TurnFailed | ev.TurnAborted):
                    break
            tg.cancel_scope.cancel()
        self.sink.waiting(False)

    def _note_waiting(self, event: ev.Event) -> None:
        if isinstance(event, ev.PipelineStage):
            self.sink.waiting(event.stage == "pre_send")
        elif not isinstance(event, ev.Usage):
            self.sink.waiting(False)

    async def show(self, event: ev.Event) -> None:
        match event:
            case ev.AssistantTextDelta():
                self.sink.text(event.item_id, event.text)
            case ev.ItemCompleted(item=AssistantText() as text):
                self.sink.text_done(text.id, text.text)
            case ev.AssistantReasoningDelta():
                if event.item_id not in self._thinking:
                    self._thinking.add(event.item_id)
                    self.sink.line("thinking...", "dim")
            case ev.ItemCreated(item=ToolCall() as call):
                args = bytes(call.arguments).decode("utf-8", "replace")
                self.sink.line(f"-> {call.name}({_cut(args, 120)})", "tool")
            case ev.ItemCompleted(item=ToolResult() as result):
                self._result(result)
            case ev.ItemCompleted(item=ErrorItem() as error):
                self.sink.line(f"error [{error.code}]: {error.message}", "error")
            case ev.ApprovalRequested():
                await self._approve(event)
            case ev.UserInputRequested():
                await self._ask(event)
            case ev.WarningEvent():
                self.sink.line(f"warning [{event.code}]: {event.message}", "warn")
            case ev.TurnCompleted() | ev.TurnFailed() | ev.TurnAborted():
                self._settled(event)
            case _:
                pass

    def _result(self, result: ToolResult) -> None:
        first = result.output.strip().split("\n", 1)[0]
        lines = result.output.count("\n") + 1
        more = f" (+{lines - 1} lines)" if lines > 1 else ""
        if result.is_error:
            self.sink.line(f"   error: {_cut(first, 100)}{more}", "error")
        else:
            self.sink.line(f"   ok: {_cut(first, 100)}{more}")

    async def _approve(self, event: ev.ApprovalRequested) -> None:
        self.sink.line(f"approval needed: {event.summary}", "warn")
        if self.prompter is None:
            self.sink.line("   denied: no terminal to ask on")
            await self._answer_approval(event.approval_id, "denied", "no terminal to ask on")
            return
        reply = await self.prompter.prompt("   allow? [y/N] ")
        if reply.kind == "text":
            approved = reply.text.strip().lower() in ("y", "yes")
            await self._answer_approval(event.approval_id, "approved" if approved else "denied")
        elif reply.kind == "eof":
            self.sink.line("denied; interrupting the turn", "warn")
            await self._answer_approval(event.approval_id, "denied", "denied with Ctrl-D")
            await self.interrupt(event.turn_id)
        else:
            self.sink.line("interrupting the turn", "warn")
            await self.interrupt(event.turn_id)

    async def _ask(self, event: ev.UserInputRequested) -> None:
        self.sink.line(f"question: {event.question}", "warn")
        for option in event.options:
            self.sink.line(f"   - {option}")
        if self.prompter is None:
            await self._answer_question(event.request_id, None)
            return
        reply = await self.prompter.prompt("   answer: ")
        if reply.kind == "text":
            await self._answer_question(event.request_id, reply.text or None)
            return
        if reply.kind == "eof":
            await self._answer_question(event.request_id, None)
        self.sink.line("interrupting the turn", "warn")
        await self.interrupt(event.turn_id)

    async def _answer_approval(
        self, approval_id: str, decision: str, reason: str | None = None
    ) -> None:
        with suppress(AnswerConflict):
            await self.service.answer_approval(approval_id, decision, reason)

    async def _answer_question(self, request_id: str, answer: str | None) -> None:
        with suppress(AnswerConflict):
            await self.service.answer_user_input(request_id, answer)

    async def interrupt(self, turn_id: str | None) -> None:
        """Interrupt ``turn_id`` if it still runs (a signal may have been first)."""
        if turn_id is not None:
            with suppress(TurnNotRunning):
                await self.service.interrupt_turn(self.thread_id, turn_id)

    def _settled(self, event: ev.Event) -> None:
        state = self.service.state(self.thread_id)
        turn = next((t for t in state.turns if t.turn_id == event.turn_id), None)
        status = turn.status if turn is not None else "settled"
        took = f" in {turn.duration_ms / 1000:.1f}s" if turn and turn.duration_ms else ""
        tone: Tone = {"completed": "good", "failed": "error"}.get(status, "warn")  # type: ignore[assignment]
        self.sink.line(f"turn {status}{took}", tone)
        if turn is not None and turn.usage.calls:
            self.sink.line(f"usage: {format_usage(turn.usage)}")


def _cut(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."
