"""The interactive session: ``kun``, ``kun chat``, ``kun -c``, ``kun resume``.

One prompt is always up (:mod:`kun.chat.input`); what the user sends is a
slash command (:mod:`kun.chat.commands`), a new turn, or, while a turn runs,
steering for it (``steer_turn``: the model reads it at its next step). The
turn is shown above the prompt as it happens (:class:`~kun.cli.terminal.LiveView`
drawing through :class:`~kun.chat.view.ChatSink`). Esc or Ctrl-C interrupts
the turn; Ctrl-D or ``/quit`` leaves (interrupting a running turn first).
SIGTERM and SIGHUP interrupt the turn, record it ``aborted`` and end the
session — except a turn that only waits for an approval or an answer, which
is left waiting for the next ``kun resume`` (durable suspension).

A new session's thread is created with its first message, so opening kun
and leaving at once leaves no empty thread behind.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import TaskGroup

from kun.app.selection import SwitchableModel, changed_model, choose_model, parse_target
from kun.chat.commands import run_command
from kun.chat.input import ChatInput
from kun.chat.prompt_loop import PromptLoop
from kun.chat.view import ChatSink
from kun.cli.options import pasteable
from kun.cli.terminal import LiveView
from kun.contracts.threads import ApprovalPolicy, ThreadSettings
from kun.runtime.control_channel import serve_control
from kun.runtime.errors import SteeringFull, TurnNotRunning
from kun.runtime.service import TurnService

__all__ = ["ChatSession", "SessionSetup"]


@dataclass(frozen=True)
class SessionSetup:
    home: Path
    workspace: Path
    approval: ApprovalPolicy
    thread_id: str | None


class ChatSession(PromptLoop):
    def __init__(
        self,
        setup: SessionSetup,
        service: TurnService,
        router: Any,
        model: SwitchableModel,
        prompt: ChatInput,
        sink: ChatSink,
    ) -> None:
        self.home = setup.home
        self.workspace = setup.workspace
        self.service = service
        self.router = router
        self.model = model
        self.input = prompt
        self.sink = sink
        self.thread_id: str | None = None
        self.turn_id: str | None = None
        self.view: LiveView | None = None
        self.plan_mode = False  # /plan on: the next turns only plan (kun.chat.plan_command)
        self._approval: ApprovalPolicy = setup.approval
        self._closing = False
        self._tg: TaskGroup | None = None
        self._late: dict[str, list[str]] = {}
        self.switch_thread(setup.thread_id)

    # -- what commands use ------------------------------------------------------

    @property
    def approval(self) -> ApprovalPolicy:
        if self.thread_id is None:
            return self._approval
        return self.service.state(self.thread_id).settings.approval_policy

    async def set_approval(self, policy: Any) -> None:
        self._approval = policy
        if self.thread_id is not None:
            await self.service.update_thread(self.thread_id, approval_policy=policy)

    async def switch_model(self, text: str) -> None:
        """``/model``: the named model (of the current provider unless named),
        recorded on the thread."""
        provider, model = parse_target(text)
        client = choose_model(self.router, provider=provider or self.model.provider, model=model)
        self.model.client = client
        if self.thread_id is not None:
            changes = changed_model(self.service.state(self.thread_id).settings, client)
            if changes:
                await self.service.update_thread(self.thread_id, **changes)

    def switch_thread(self, thread_id: str | None) -> None:
        self.thread_id = thread_id
        self.view = None
        if thread_id is not None:
            self.view = LiveView(self.service, thread_id, self.sink, self.input)
            workspace = self.service.state(thread_id).settings.workspace
            if workspace:
                self.workspace = Path(workspace)

    # -- the loop ---------------------------------------------------------------

    async def run(self) -> None:
        from kun.cli.tty import watch

        async with anyio.create_task_group() as tg:
            self._tg = tg
            await tg.start(watch, self._on_signal)
            self.greet(f"{self.model.provider}/{self.model.model}", self.approval)
            await self._rearm()
            await self.prompt_until_closed()
            tg.cancel_scope.cancel()

    async def _command(self, line: str) -> None:
        await run_command(self, line)

    async def _start(self, text: str) -> None:
        if self.thread_id is None:
            settings = ThreadSettings(
                workspace=str(self.workspace.resolve()),
                provider=self.model.provider,
                model=self.model.model,
                approval_policy=self._approval,
            )
            self.switch_thread(await self.service.create_thread(settings))
        assert self.thread_id is not None and self.view is not None and self._tg is not None
        after = self.service.state(self.thread_id).last_seq
        self.turn_id = await self.service.start_turn(self.thread_id, text, plan_mode=self.plan_mode)
        self._tg.start_soon(self._follow, self.view, after, self.turn_id)

    async def _rearm(self) -> None:
        """A thread whose turn was left waiting for an answer (kun stopped
        at an approval or a question) goes on waiting here: the turn is
        re-armed (:mod:`kun.runtime.rearm`) and shown from its start, so its
        approval or question is asked again and the answer resumes it."""
        from kun.runtime.rearm import rearm

        if self.thread_id is None or self.view is None or self._tg is None:
            return
        turn_id = await rearm(self.service, self.thread_id, model=self.model)
        if turn_id is None:
            return
        turn = next(t for t in self.service.state(self.thread_id).turns if t.turn_id == turn_id)
        self.say("this thread's last turn is still waiting for your answer", "warn")
        self.turn_id = turn_id
        self._tg.start_soon(self._follow, self.view, turn.started_seq - 1, turn_id)

    async def _follow(self, view: LiveView, after: int, turn_id: str) -> None:
        try:
            async with serve_control(self.service, view.thread_id):
                await view.follow(after, turn_id)
        finally:
            if self.turn_id == turn_id:
                self.turn_id = None
            self.input.refresh()
        late = self._late.pop(turn_id, [])
        if late and not self._closing and self.turn_id is None:
            self.say("(your steering came after the turn ended: sending it now)", "dim")
            await self._start("\n\n".join(late))
        elif not self._closing and self.turn_id is None and self._tg is not None:
            self._tg.start_soon(self._follow_resume, view, turn_id)

    async def _follow_resume(self, view: LiveView, settled: str) -> None:
        """Under an active goal kun resumes the thread by itself after a
        turn (:mod:`kun.runtime.resume`); the session shows the resumed turn
        as its own. A message typed before the timer fires starts the
        user's turn instead (and drops the resume)."""
        thread_id = self.thread_id
        resumes = self.service.resumes
        pending = resumes.scheduled_after(thread_id, settled) if thread_id else None
        if thread_id is None or pending is None:
            return
        self.say(
            f"(goal still active: kun continues in {pending.plan.delay_seconds:.0f} s; "
            "type to step in, /goal pause to stop)",
            "dim",
        )
        turn_id = await resumes.next_turn(thread_id, settled)
        if turn_id is None or self._closing or self.thread_id != thread_id:
            return
        if self.turn_id is not None:
            return
        turn = next(t for t in self.service.state(thread_id).turns if t.turn_id == turn_id)
        self.turn_id = turn_id
        await self._follow(view, turn.started_seq - 1, turn_id)

    async def _steer(self, thread_id: str, turn_id: str, text: str) -> None:
        """Steer the running turn. The loop takes one more step for steering
        that arrives during its final step, so only text that comes after the
        turn has ended is refused; that becomes the next message."""
        try:
            await self.service.steer_turn(thread_id, turn_id, text)
        except (SteeringFull, TurnNotRunning) as exc:
            if isinstance(exc, SteeringFull) and not exc.settled:
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

        from kun.cli.run import waits_for_answer

        thread_id = self.thread_id
        if signum == signal.SIGINT or thread_id is None:
            await self._interrupt()
        elif self.turn_id is not None and waits_for_answer(self.service, thread_id):
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
        return (
            f" {self.model.provider}/{self.model.model} · approval {self.approval} · "
            f"{where} · /help"
        )
