"""Showing a live turn in a terminal, and answering its questions there.

``LiveView`` follows the thread's events as they are appended and prints them
compactly: assistant text as it streams, reasoning as a single line, tool
calls and their results in one or two lines each, warnings, the outcome and
the usage. Approvals and questions are asked on a TTY; without one they are
denied and cancelled, so an unattended run never hangs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TextIO

import anyio
import click

from kun.contracts import events as ev
from kun.contracts.items import ErrorItem, ToolCall, ToolResult
from kun.domain.transcript import format_usage
from kun.runtime.service import TurnService

Asker = Callable[[str], Awaitable[str | None]]


class LiveView:
    def __init__(
        self,
        service: TurnService,
        thread_id: str,
        out: TextIO,
        *,
        interactive: bool,
        color: bool = False,
    ) -> None:
        self.service = service
        self.thread_id = thread_id
        self.out = out
        self.interactive = interactive
        self.color = color
        self._mid_line = False
        self._thinking: set[str] = set()
        self._waiting = False
        self._spinning = False

    def _style(self, text: str, **style: object) -> str:
        return click.style(text, **style) if self.color else text  # type: ignore[arg-type]

    def _line(self, text: str) -> None:
        if self._mid_line:
            self.out.write("\n")
            self._mid_line = False
        self.out.write(text + "\n")
        self.out.flush()

    async def follow(self, after: int, turn_id: str) -> None:
        """Print the turn's events until it settles; on a terminal, a spinner
        runs while the model is thinking (after a request is sent, before
        its first output)."""
        async with anyio.create_task_group() as tg:
            if self.interactive:
                tg.start_soon(self._spin)
            async for event in self.service.recorder.subscribe(self.thread_id, after=after):
                if event.turn_id not in (None, turn_id):
                    continue
                self._note_waiting(event)
                await self.show(event)
                if isinstance(event, ev.TurnCompleted | ev.TurnFailed | ev.TurnAborted):
                    break
            tg.cancel_scope.cancel()
        self._clear_spinner()

    def _note_waiting(self, event: ev.Event) -> None:
        was = self._waiting
        if isinstance(event, ev.PipelineStage):
            self._waiting = event.stage == "pre_send"
        elif not isinstance(event, ev.Usage):
            self._waiting = False
        if was and not self._waiting:
            self._clear_spinner()

    async def _spin(self) -> None:
        frames = "|/-\\"
        tick = 0
        while True:
            await anyio.sleep(0.1)
            if self._waiting:
                self.out.write(f"\r{frames[tick % 4]} waiting for the model")
                self.out.flush()
                self._spinning = True
                tick += 1

    def _clear_spinner(self) -> None:
        if self._spinning:
            self.out.write("\r\x1b[2K")
            self.out.flush()
            self._spinning = False

    async def show(self, event: ev.Event) -> None:
        match event:
            case ev.AssistantTextDelta():
                self.out.write(event.text)
                self.out.flush()
                self._mid_line = not event.text.endswith("\n")
            case ev.AssistantReasoningDelta():
                if event.item_id not in self._thinking:
                    self._thinking.add(event.item_id)
                    self._line(self._style("thinking...", dim=True))
            case ev.ItemCreated(item=ToolCall() as call):
                args = bytes(call.arguments).decode("utf-8", "replace")
                self._line(self._style(f"-> {call.name}({_cut(args, 120)})", fg="cyan"))
            case ev.ItemCompleted(item=ToolResult() as result):
                first = result.output.strip().split("\n", 1)[0]
                lines = result.output.count("\n") + 1
                mark = self._style("error", fg="red") if result.is_error else "ok"
                self._line(
                    f"   {mark}: {_cut(first, 100)}"
                    + (f" (+{lines - 1} lines)" if lines > 1 else "")
                )
            case ev.ItemCompleted(item=ErrorItem() as error):
                self._line(self._style(f"error [{error.code}]: {error.message}", fg="red"))
            case ev.ApprovalRequested():
                await self._approve(event)
            case ev.UserInputRequested():
                await self._ask(event)
            case ev.WarningEvent():
                self._line(self._style(f"warning [{event.code}]: {event.message}", fg="yellow"))
            case ev.TurnCompleted() | ev.TurnFailed() | ev.TurnAborted():
                self._settled(event)
            case _:
                pass

    async def _approve(self, event: ev.ApprovalRequested) -> None:
        self._line(self._style(f"approval needed: {event.summary}", fg="yellow"))
        if not self.interactive:
            self._line("   denied: no terminal to ask on")
            await self.service.answer_approval(event.approval_id, "denied", "no terminal to ask on")
            return
        approved = click.confirm("   allow?", default=False)
        await self.service.answer_approval(event.approval_id, "approved" if approved else "denied")

    async def _ask(self, event: ev.UserInputRequested) -> None:
        self._line(self._style(f"question: {event.question}", fg="yellow"))
        for option in event.options:
            self._line(f"   - {option}")
        if not self.interactive:
            await self.service.answer_user_input(event.request_id, None)
            return
        answer = click.prompt("   answer", default="", show_default=False)
        await self.service.answer_user_input(event.request_id, answer or None)

    def _settled(self, event: ev.Event) -> None:
        state = self.service.state(self.thread_id)
        turn = next((t for t in state.turns if t.turn_id == event.turn_id), None)
        status = turn.status if turn is not None else "settled"
        took = f" in {turn.duration_ms / 1000:.1f}s" if turn and turn.duration_ms else ""
        color = {"completed": "green", "failed": "red"}.get(status, "yellow")
        self._line(self._style(f"turn {status}{took}", fg=color))
        if turn is not None and turn.usage.calls:
            self._line(f"usage: {format_usage(turn.usage)}")


def _cut(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."
