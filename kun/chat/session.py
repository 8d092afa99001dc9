"""The interactive session: ``kun``, ``kun chat``, ``kun -c``, ``kun resume``,
on the home's threads or, with ``--server URL``, on a ``kun serve``'s: the
same code, through :class:`~kun.app.interface.Kun`.

One prompt is always up (:mod:`kun.chat.input`); what the user sends is a
slash command (:mod:`kun.chat.commands`), a new turn, or, while a turn runs,
steering for it (the model reads it at its next step). The turn is shown
above the prompt as it happens (:class:`~kun.cli.terminal.LiveView` drawing
through :class:`~kun.chat.view.ChatSink`), from a feed opened before the
turn starts. Esc or Ctrl-C interrupts the turn; Ctrl-D or ``/quit`` leaves
(interrupting a running turn first). SIGTERM and SIGHUP interrupt the turn,
record it ``aborted`` and end the session — except a turn that only waits
for an approval or an answer, which is left waiting for the next ``kun
resume`` (durable suspension).

While no turn of its own runs, the session watches the thread: a turn
started by someone else (kun resuming the goal, another client of the
server) is shown as its own. A thread whose last turn is still open
(running elsewhere, or waiting for an answer) is joined where it is: shown
from its start, so its question is asked here.

A new session's thread is created with its first message (or its first
``/goal``), so opening kun and leaving at once leaves no empty thread.
"""

from __future__ import annotations

from dataclasses import dataclass

import anyio
import msgspec
from anyio.abc import TaskGroup, TaskStatus

from kun.app.interface import Kun, ThreadState
from kun.app.live import reachable, steered_too_late, waits_for_answer
from kun.app.requests import CreateThread, StartTurn, UpdateThread
from kun.chat.commands import run_command
from kun.chat.input import ChatInput
from kun.chat.prompt_loop import PromptLoop
from kun.chat.view import ChatSink
from kun.cli.options import explained, pasteable
from kun.cli.terminal import LiveView
from kun.contracts import events as ev
from kun.errors import KunError

__all__ = ["ChatSession", "SessionSetup"]


@dataclass(frozen=True)
class SessionSetup:
    workspace: str
    """The folder (absolute) a new thread works in and ``-c`` looks in."""
    thread_id: str | None
    changes: UpdateThread
    """Provider, model, approval, effort and limits given on the command
    line: a new thread's, or changes recorded on the resumed one."""
    where: str | None = None
    """The server's URL (``None``: this machine's home)."""


class ChatSession(PromptLoop):
    def __init__(self, kun: Kun, setup: SessionSetup, prompt: ChatInput, sink: ChatSink) -> None:
        self.kun = kun
        self.workspace = setup.workspace
        self.changes = setup.changes
        self.where = setup.where
        self.input = prompt
        self.sink = sink
        self.thread_id: str | None = None
        self.turn_id: str | None = None
        self.view: LiveView | None = None
        self.state: ThreadState | None = None
        self.plan_mode = False  # /plan on: the next turns only plan (kun.chat.plan_command)
        self._closing = False
        self._tg: TaskGroup | None = None
        self._watching: anyio.CancelScope | None = None
        self._late: dict[str, list[str]] = {}
        self.switch_thread(setup.thread_id)

    # -- what commands use ------------------------------------------------------

    @property
    def approval(self) -> str:
        if self.state is not None:
            return self.state.settings.approval_policy
        return self.changes.approval_policy or "as configured"

    @property
    def target(self) -> str:
        """The model the next turn runs on, as ``provider/model``."""
        if self.state is not None and self.state.settings.provider:
            return f"{self.state.settings.provider}/{self.state.settings.model}"
        provider, model = self.changes.provider, self.changes.model
        if provider and model:
            return f"{provider}/{model}"
        return model or provider or "the configured model"

    async def refresh(self) -> ThreadState:
        assert self.thread_id is not None
        self.state = await self.kun.thread(self.thread_id)
        if self.state.settings.workspace:
            self.workspace = self.state.settings.workspace
        return self.state

    async def change(self, changes: UpdateThread) -> None:
        """Change the thread's settings (before the first message: the new
        thread's)."""
        if self.thread_id is None:
            given = {
                name: value
                for name in changes.__struct_fields__
                if (value := getattr(changes, name)) is not None
            }
            self.changes = msgspec.structs.replace(self.changes, **given)
            return
        await self.kun.update_thread(self.thread_id, changes)
        await self.refresh()

    async def thread(self) -> str:
        """The session's thread, created now if it has none yet."""
        if self.thread_id is None:
            c = self.changes
            created = await self.kun.create_thread(
                CreateThread(
                    workspace=self.workspace,
                    provider=c.provider,
                    model=c.model,
                    approval_policy=c.approval_policy,
                    reasoning_effort=c.reasoning_effort,
                    limits=c.limits,
                )
            )
            self.changes = UpdateThread()
            self.switch_thread(created.thread_id)
            await self.refresh()
        assert self.thread_id is not None
        return self.thread_id

    def switch_thread(self, thread_id: str | None) -> None:
        self._stop_watching()
        self.thread_id = thread_id
        self.state = None
        self.view = None
        if thread_id is not None:
            self.view = LiveView(self.kun, thread_id, self.sink, self.input)

    async def switched(self, thread_id: str | None) -> None:
        """Go on in ``thread_id`` (a fork; ``None``: a new thread)."""
        self.switch_thread(thread_id)
        if thread_id is not None:
            await self.refresh()
            self._watch()

    # -- the loop ---------------------------------------------------------------

    async def run(self, recap: bool = False) -> None:
        from kun.cli.tty import watch

        async with anyio.create_task_group() as tg:
            self._tg = tg
            await tg.start(watch, self._on_signal)
            if self.thread_id is not None:
                await self._open_thread(recap)
            where = f"{self.where} · {self.target}" if self.where else self.target
            self.greet(where, self.approval)
            await self._join_open_turn()
            await self.prompt_until_closed()
            tg.cancel_scope.cancel()

    async def _open_thread(self, recap: bool) -> None:
        from kun.chat.start import say_recap

        state = await self.refresh()
        if self.changes != UpdateThread():
            assert self.thread_id is not None
            before = state.settings.workspace
            await self.kun.update_thread(self.thread_id, self.changes)
            state = await self.refresh()
            if state.settings.workspace != before:
                self.say(
                    f"thread {state.thread_id} now works in {state.settings.workspace} "
                    f"(was {before or 'unset'})"
                )
            self.changes = UpdateThread()
        if recap:
            say_recap(self, state)

    async def _command(self, line: str) -> None:
        await run_command(self, line)

    async def _start(self, text: str) -> None:
        await self.thread()
        assert self.view is not None and self._tg is not None
        self._stop_watching()
        after = (await self.refresh()).last_seq
        request = StartTurn(text=text, plan_mode=self.plan_mode)
        await self._tg.start(self._turn, self.view, after, request)

    async def _turn(
        self,
        view: LiveView,
        after: int,
        turn: StartTurn | str,
        *,
        task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Start the turn (a request) or join it (an id) on a feed opened
        first, and show it until it settles."""
        turn_id: str | None = None
        started = False
        try:
            async with view.feed(after) as events, reachable(self.kun, view.thread_id):
                if isinstance(turn, str):
                    turn_id = turn
                else:
                    try:
                        turn_id = (await self.kun.start_turn(view.thread_id, turn)).turn_id
                    except KunError as exc:
                        self.say(explained(exc), "error")
                        return
                self.turn_id = turn_id
                started = True
                task_status.started()
                await view.show_turn(events, turn_id)
        except KunError as exc:
            self.say(explained(exc), "error")
        finally:
            if turn_id is not None and self.turn_id == turn_id:
                self.turn_id = None
            if not started:
                task_status.started()  # the caller goes on: nothing runs
            self.input.refresh()
        if turn_id is not None:
            await self._after(view, turn_id)

    async def _after(self, view: LiveView, turn_id: str) -> None:
        """Send steering that came too late as the next message; else watch
        for the next turn (a goal resumed: said with its delay)."""
        late = self._late.pop(turn_id, [])
        if self._closing or self.turn_id is not None or self.thread_id != view.thread_id:
            return
        if late:
            self.say("(your steering came after the turn ended: sending it now)", "dim")
            await self._start("\n\n".join(late))
            return
        resume = await self.kun.goal_resume(view.thread_id, turn_id)
        if resume.state == "waiting":
            self.say(
                f"(goal still active: kun continues in {resume.delay_seconds or 0:.0f} s; "
                "type to step in, /goal pause to stop)",
                "dim",
            )
        await self.refresh()
        self._watch()

    async def _join_open_turn(self) -> None:
        """Show the thread's open turn (running elsewhere, or waiting for an
        answer) from its start, so its question is asked here; else watch."""
        if self.thread_id is None or self.view is None or self._tg is None:
            return
        state = await self.refresh()
        last = state.running_turn or (state.turns[-1] if state.turns else None)
        if last is None or last.settled:
            self._watch()
            return
        if waits_for_answer(state):
            # Opening the thread for turns takes up a turn nobody runs that
            # waits for an answer (re-armed here, or by the server), so the
            # answer given here resumes it.
            await self.kun.update_thread(self.thread_id, UpdateThread())
            self.say("this thread's last turn is still waiting for your answer", "warn")
        else:
            self.say("this thread's last turn is still running (elsewhere): joining it", "warn")
        await self._tg.start(self._turn, self.view, last.started_seq - 1, last.turn_id)

    def _watch(self) -> None:
        """While no turn of the session runs, show a turn started by someone
        else (the goal resumed, another client) as the session's own."""
        if self._closing or self.turn_id is not None or self.view is None or self._tg is None:
            return
        if self.state is None:
            return
        self._stop_watching()
        self._tg.start_soon(self._watch_for_turn, self.view, self.state.last_seq)

    def _stop_watching(self) -> None:
        watching, self._watching = self._watching, None
        if watching is not None:
            watching.cancel()

    async def _watch_for_turn(self, view: LiveView, after: int) -> None:
        with anyio.CancelScope() as scope:
            self._watching = scope
            try:
                async with view.feed(after) as events:
                    async for event in events:
                        if isinstance(event, ev.TurnStarted) and event.turn_id is not None:
                            break
                    else:
                        return
                    if self.turn_id is not None or self.view is not view:
                        return
                    self._watching = None
                    turn_id = event.turn_id
                    self.say(
                        "a turn started (the goal resumed, or another client): showing it", "dim"
                    )
                    self.turn_id = turn_id
                    self.input.refresh()
                    try:
                        await view.show_turn(events, turn_id)
                    finally:
                        if self.turn_id == turn_id:
                            self.turn_id = None
                        self.input.refresh()
            except KunError as exc:
                self.say(explained(exc), "error")
                return
            finally:
                if self._watching is scope:
                    self._watching = None
        if not scope.cancel_called and self.turn_id is None:
            await self._after(view, turn_id)

    async def _steer(self, thread_id: str, turn_id: str, text: str) -> None:
        """Steer the running turn. The loop takes one more step for steering
        that arrives during its final step, so only text that comes after the
        turn has ended is refused; that becomes the next message."""
        try:
            await self.kun.steer(thread_id, turn_id, text)
        except KunError as exc:
            if not steered_too_late(exc):
                raise
            self._late.setdefault(turn_id, []).append(text)
            return
        self.say("(steering: the model reads this at its next step)", "dim")

    async def _interrupt(self) -> None:
        if self.turn_id is not None and self.view is not None:
            self.say("interrupting the turn", "warn")
            await self.view.interrupt(self.turn_id)

    async def _on_signal(self, signum: int) -> None:
        """SIGINT interrupts the turn; SIGTERM and SIGHUP end the session
        too, interrupting the turn unless it only waits for the user's
        answer: then it is left waiting (durable suspension), for the next
        ``kun resume`` to ask again."""
        import signal

        thread_id = self.thread_id
        if signum == signal.SIGINT or thread_id is None:
            await self._interrupt()
        elif self.turn_id is not None and waits_for_answer(await self.kun.thread(thread_id)):
            again = pasteable("resume", thread_id[:12])
            self.say(f"the turn still waits for your answer: {again}", "warn")
        else:
            await self._interrupt()
        if signum != signal.SIGINT:
            self._closing = True
            if self._tg is not None:
                self._tg.cancel_scope.cancel()

    # -- the prompt ---------------------------------------------------------------

    def _idle_toolbar(self) -> str:
        where = self.thread_id or "new thread"
        server = f"{self.where} · " if self.where else ""
        return f" {server}{self.target} · approval {self.approval} · {where} · /help"
