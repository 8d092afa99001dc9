"""Showing a live turn in a terminal, and answering its questions there.

``LiveView`` follows the thread's events as they are appended and says what
they mean: assistant text as it streams (the recorder's previews, every
30 ms, each character once: :class:`kun.app.live.LiveText`), reasoning as
a single line, tool calls and their results in one or two lines each,
warnings, the outcome and the usage. *How* it is drawn is a :class:`Sink`'s
business: ``PlainSink`` writes plain lines to a stream (``kun run``: pipes,
logs, a terminal with a spinner); the interactive session has its own
(:mod:`kun.chat.view`).

The view speaks only :class:`~kun.app.interface.Kun`: its events come
from ``kun.follow``, the state it reads from ``kun.turn``, and its answers
go through ``kun.answer_approval`` (an "always" as the answer's rule, so it
works over a server too), ``kun.answer_user_input`` and ``kun.interrupt``;
the same code shows a turn run here or on a ``kun serve``.

Approvals and questions are asked through a :class:`Prompter`; without one
they are denied and cancelled, so an unattended run never hangs. At a
prompt, Ctrl-C and Esc interrupt the turn and Ctrl-D denies (or cancels the
question) and interrupts: each is one line, at once.

An approval shows the diff a file write would make, then takes ``y`` (yes),
``a`` (always for this thread: the tool, or for ``bash`` the command's
prefix, recorded as ``thread_updated``; :mod:`kun.tools.allow`), ``n`` or
Enter (no), or any other text: no, with that text as the reason the model
reads. A file write's result shows the diff it made, unless it is the one
just approved. A sink with a ``diff`` method (:class:`DiffSink`) draws diffs
itself; any other gets them a line at a time, coloured by tone.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from typing import Literal, Protocol, TextIO, runtime_checkable

import anyio
import click

from kun.app.interface import Kun
from kun.app.live import MATERIALIZED_SUMMARY, LiveText, describe_rule, rule_for, superseded
from kun.contracts import events as ev
from kun.contracts.items import AssistantText, ErrorItem, Plan, ToolCall, ToolResult
from kun.contracts.threads import AllowRule
from kun.domain.choices import NotAnOption, chosen_answer, numbered
from kun.domain.shown import shown, shown_cell
from kun.domain.transcript import format_usage, plural

__all__ = ["DiffSink", "LiveView", "PlainSink", "Prompter", "Reply", "Sink", "Tone"]

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


@runtime_checkable
class DiffSink(Protocol):
    """A sink that draws a unified diff its own way (highlighted)."""

    def diff(self, text: str) -> None: ...


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
        fragment = shown(fragment)
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
        text = shown(text)
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
    live = True
    """Follow previews of the text being streamed, not only what is logged."""

    def __init__(
        self, kun: Kun, thread_id: str, sink: Sink, prompter: Prompter | None = None
    ) -> None:
        self.kun = kun
        self.thread_id = thread_id
        self.sink = sink
        self.prompter = prompter
        self._thinking: set[str] = set()
        self._diffs: dict[str, str] = {}
        self._streamed: dict[str, list[str]] = {}
        self._rule = LiveText()

    def note(self, text: str, tone: Tone = "dim") -> None:
        """A line from outside the event stream (a retry, an interrupt)."""
        self.sink.line(text, tone)

    @asynccontextmanager
    async def feed(self, after: int) -> AsyncIterator[AsyncIterator[ev.Event]]:
        """The thread's events after seq ``after``, then live (with previews
        if ``live``), for every turn shown until the block ends. Open it
        before starting a turn: a preview is a prefix of its durable delta
        only for a feed that was there when the item began
        (:class:`~kun.app.live.LiveText`). The events are read into a
        queue by a task of their own, so a reader may stop waiting (a
        signal, a timeout) without losing the feed."""
        self._rule = LiveText()
        send, receive = anyio.create_memory_object_stream[ev.Event](math.inf)
        async with (
            self.kun.follow(self.thread_id, after=after, previews=self.live) as feed,
            anyio.create_task_group() as tg,
        ):

            async def pump() -> None:
                async with send:
                    async for event in feed:
                        self.received(event)
                        await send.send(event)

            tg.start_soon(pump)
            with receive:
                yield receive
            tg.cancel_scope.cancel()

    def received(self, event: ev.Event) -> None:
        """An event read from the feed, before it is shown."""

    async def follow(self, after: int, turn_id: str) -> None:
        """Show ``turn_id`` (started already) from seq ``after`` until it settles."""
        async with self.feed(after) as events:
            await self.show_turn(events, turn_id)

    async def show_turn(self, events: AsyncIterator[ev.Event], turn_id: str) -> None:
        """Show the turn's events until it settles; the sink animates while
        the model is thinking (after a request is sent, before its first
        output)."""
        async with anyio.create_task_group() as tg:
            tg.start_soon(self.sink.animate)
            async for got in events:
                if got.turn_id not in (None, turn_id):
                    continue
                event = self._rule.fresh(got)
                if event is None:
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
                self._streamed.setdefault(event.item_id, []).append(event.text)
                self.sink.text(event.item_id, event.text)
            case ev.ItemCompleted(item=AssistantText() as text):
                streamed = "".join(self._streamed.pop(text.id, ()))
                self.sink.text_done(text.id, streamed if event.text_from_deltas else text.text)
            case ev.AssistantReasoningDelta():
                if event.item_id not in self._thinking:
                    self._thinking.add(event.item_id)
                    self.sink.line("thinking...", "dim")
            case ev.ItemCreated(item=ToolCall() as call):
                args = bytes(call.arguments).decode("utf-8", "replace")
                self.sink.line(f"-> {call.name}({_cut(args, 120)})", "tool")
            case ev.ItemCompleted(item=ToolResult() as result):
                self._result(result)
            case ev.ItemCompleted(item=Plan() as plan):
                self._plan(plan)
            case ev.ItemCompleted(item=ErrorItem() as error):
                self.sink.line(f"error [{error.code}]: {error.message}", "error")
            case ev.ApprovalRequested():
                await self._approve(event)
            case ev.UserInputRequested():
                await self._ask(event)
            case ev.WarningEvent():
                self.sink.line(f"warning [{event.code}]: {event.message}", "warn")
            case ev.SubagentStarted():
                who = f"agent {event.agent}" if event.agent else "read-only helper"
                self.sink.line(f"   sub-agent ({who}) on side thread {event.side_thread}", "dim")
            case ev.TurnQueued():
                self.sink.line("queued: it starts when the running turn ends", "dim")
            case ev.TurnCompleted() | ev.TurnFailed() | ev.TurnAborted():
                await self._settled(event)
            case _:
                pass

    def _plan(self, plan: Plan) -> None:
        """A plan the model wrote with create_plan is shown whole (its call
        line is cut short); one materialised from the reply was just shown
        (older logs mark it by its summary alone)."""
        if not plan.from_reply and plan.summary != MATERIALIZED_SUMMARY:
            for row in plan.markdown.rstrip("\n").split("\n"):
                self.sink.line(f"   {row}")
        self.sink.line(f"plan recorded: {plan.summary or 'the plan above'}", "good")

    def _result(self, result: ToolResult) -> None:
        first = result.output.strip().split("\n", 1)[0]
        lines = result.output.count("\n") + 1
        more = f" (+{plural(lines - 1, 'line')})" if lines > 1 else ""
        if result.is_error:
            self.sink.line(f"   error: {_cut(first, 100)}{more}", "error")
        else:
            self.sink.line(f"   ok: {_cut(first, 100)}{more}")
        if result.diff and self._diffs.pop(result.call_id, None) != result.diff:
            self._diff(result.diff)

    def _diff(self, diff: str) -> None:
        if isinstance(self.sink, DiffSink):
            self.sink.diff(diff)
            return
        for row in diff.split("\n"):
            self.sink.line(f"   {row}", _diff_tone(row))

    async def _approve(self, event: ev.ApprovalRequested) -> None:
        self.sink.line(f"approval needed{_whose(event)}: {shown_cell(event.summary)}", "warn")
        diff = event.diff if isinstance(event.diff, str) else ""
        if diff:
            self._diff(diff)
            if event.call_id is not None:
                self._diffs[event.call_id] = diff
        if self.prompter is None:
            self.sink.line("   denied: no terminal to ask on")
            await self._answer_approval(event.approval_id, "denied", "no terminal to ask on")
            return
        rule = await self._always_rule(event)
        always = (
            f"a always for this thread: {describe_rule(rule)}"
            if rule
            else f"no always: {NO_ALWAYS}"
        )
        self.sink.line(f"   y yes · {always} · n no · or type why not", "dim")
        asked = "   allow? [y/a/N] " if rule else "   allow? [y/N] "
        reply = await self.prompter.prompt(asked)
        while reply.kind == "text" and rule is None and _means_always(reply.text):
            self.sink.line(f"   no always here ({NO_ALWAYS}): y allows once, n denies", "warn")
            reply = await self.prompter.prompt(asked)
        if reply.kind == "text":
            await self._decide(event, reply.text.strip(), rule)
        elif reply.kind == "eof":
            self.sink.line("denied; interrupting the turn", "warn")
            await self._answer_approval(event.approval_id, "denied", "denied with Ctrl-D")
            await self.interrupt(event.turn_id)
        else:
            self.sink.line("interrupting the turn", "warn")
            await self.interrupt(event.turn_id)

    async def _always_rule(self, event: ev.ApprovalRequested) -> AllowRule | None:
        """The rule "always" would add: from the call's arguments as the
        thread recorded them (none for a sub-agent's call: its rules are
        its side thread's)."""
        if event.turn_id is None or event.call_id is None or isinstance(event.side_thread, str):
            return None
        turn = await self.kun.turn(self.thread_id, event.turn_id)
        call = next(
            (i for i in turn.items if isinstance(i, ToolCall) and i.call_id == event.call_id),
            None,
        )
        return None if call is None else rule_for(call.name, bytes(call.arguments))

    async def _decide(self, event: ev.ApprovalRequested, text: str, rule: AllowRule | None) -> None:
        """``y``, ``a`` (only asked when ``rule`` can be added), ``n`` or
        Enter, or a reason to deny."""
        answer = text.lower()
        if answer in ("a", "always") and rule is not None:
            self.sink.line(f"   always allowed on this thread: {describe_rule(rule)}", "good")
            await self._answer_approval(
                event.approval_id,
                "approved",
                f"always for this thread: {describe_rule(rule)}",
                always=rule,
            )
        elif answer in ("y", "yes"):
            await self._answer_approval(event.approval_id, "approved")
        elif answer in ("", "n", "no"):
            await self._answer_approval(event.approval_id, "denied")
        else:
            await self._answer_approval(event.approval_id, "denied", text)

    async def _ask(self, event: ev.UserInputRequested) -> None:
        """Options are numbered; a number answers with its option
        (:mod:`kun.domain.choices`)."""
        self.sink.line(f"question{_whose(event)}: {event.question}", "warn")
        for line in numbered(event.options):
            self.sink.line(f"   {line}")
        if self.prompter is None:
            await self._answer_question(event.request_id, None)
            return
        hint = f"   answer (1-{len(event.options)} or your own): " if event.options else None
        while True:
            reply = await self.prompter.prompt(hint or "   answer: ")
            if reply.kind != "text":
                break
            try:
                answer = chosen_answer(reply.text, event.options)
            except NotAnOption as exc:
                self.sink.line(f"   {exc}", "warn")
                continue
            if answer != reply.text:
                self.sink.line(f"   answered: {answer}", "dim")
            await self._answer_question(event.request_id, answer or None)
            return
        if reply.kind == "eof":
            await self._answer_question(event.request_id, None)
        self.sink.line("interrupting the turn", "warn")
        await self.interrupt(event.turn_id)

    async def _answer_approval(
        self,
        approval_id: str,
        decision: Literal["approved", "denied"],
        reason: str | None = None,
        *,
        always: AllowRule | None = None,
    ) -> None:
        with _unless_moot():
            await self.kun.answer_approval(approval_id, decision, reason, always=always)

    async def _answer_question(self, request_id: str, answer: str | None) -> None:
        with _unless_moot():
            await self.kun.answer_user_input(request_id, answer)

    async def interrupt(self, turn_id: str | None) -> None:
        """Interrupt ``turn_id`` if it still runs (a signal may have been first)."""
        if turn_id is not None:
            with _unless_moot():
                await self.kun.interrupt(self.thread_id, turn_id)

    async def _settled(self, event: ev.Event) -> None:
        turn = None if event.turn_id is None else await self.kun.turn(self.thread_id, event.turn_id)
        status = turn.status if turn is not None else "settled"
        took = f" in {turn.duration_ms / 1000:.1f}s" if turn and turn.duration_ms else ""
        tone: Tone = {"completed": "good", "failed": "error"}.get(status, "warn")  # type: ignore[assignment]
        self.sink.line(f"turn {status}{took}", tone)
        if turn is not None and turn.usage.calls:
            self.sink.line(f"usage: {format_usage(turn.usage)}")


NO_ALWAYS = "not a simple command"
"""Why an approval offers no "always" when it cannot be made a rule."""


@contextmanager
def _unless_moot() -> Iterator[None]:
    """Swallow an answer or interrupt that came too late (another client
    answered first, the turn has ended): :func:`kun.app.live.superseded`."""
    try:
        yield
    except Exception as exc:
        if not superseded(exc):
            raise


def _diff_tone(row: str) -> Tone:
    if row.startswith(("+++", "---")):
        return "plain"
    if row.startswith("+"):
        return "good"
    if row.startswith("-"):
        return "error"
    return "tool" if row.startswith("@@") else "dim"


def _cut(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."


def _means_always(text: str) -> bool:
    """An "always" typed where none is offered: asked again rather than
    taken as a yes (the user meant more than once) or a denial with the
    reason "a"."""
    return text.strip().lower() in ("a", "always")


def _whose(event: ev.ApprovalRequested | ev.UserInputRequested) -> str:
    """`` (sub-agent thr_…)`` for a sub-agent's approval or question shown
    in its parent's turn (:mod:`kun.runtime.mirror`)."""
    side = event.side_thread
    return f" (sub-agent {side})" if isinstance(side, str) else ""
