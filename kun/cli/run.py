"""``kun run``: one turn from the terminal, live.

The turn runs on the thread's model unless the user names another
(:mod:`kun.app.selection`); approvals are asked on the controlling terminal
(:mod:`kun.cli.tty`); SIGINT, SIGTERM and SIGHUP interrupt the turn, which the
log records as aborted, and the view stops at once, even mid-prompt — except
that SIGTERM or SIGHUP while the turn only waits for an approval or an answer
leaves it waiting (durable suspension), for ``kun resume`` to ask again.
``--goal`` sets a goal first and stays for its resumed turns
(:mod:`kun.cli.run_goal`).
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import anyio

from kun.app.rebind import rebind_workspace
from kun.app.selection import SwitchableModel
from kun.cli.colors import use_color
from kun.cli.flags import RuntimeFlags
from kun.cli.foreground import open_foreground
from kun.cli.lognotes import notes_from_log
from kun.cli.options import pasteable
from kun.cli.run_goal import drive_goal, set_goal
from kun.cli.runjson import JsonView
from kun.cli.show_turn import show_turn
from kun.cli.terminal import LiveView, PlainSink
from kun.cli.tty import TtyPrompter, open_terminal, watch
from kun.config import Config
from kun.contracts.threads import ApprovalPolicy, Goal, ThreadSettings
from kun.domain.state import TurnState
from kun.errors import UserMistake
from kun.runtime.service import TurnService
from kun.runtime.turn_input import check_prompt


@dataclass(frozen=True)
class RunOptions:
    home: Path
    prompt: str
    thread_id: str | None
    provider: str | None
    model: str | None
    workspace: Path
    approval: ApprovalPolicy | None
    config: Path | None
    json: bool = False
    plan_mode: bool = False
    runtime: RuntimeFlags = field(default_factory=RuntimeFlags)
    goal: str | None = None
    goal_budget: int | None = None
    rebind: Path | None = None
    """``--workspace`` given with ``--thread``: the thread's workspace from now on."""


class RunResult(NamedTuple):
    """The thread, its last turn, and (``--goal``) where the goal stands."""

    thread_id: str
    turn: TurnState
    goal: Goal | None = None

    def failed(self, options: RunOptions) -> bool:
        """A turn succeeds when it completes; ``--goal`` only when the
        goal is complete (blocked, paused or still active is a failure, so
        an unattended script can tell)."""
        if options.goal is None:
            return self.turn.status != "completed"
        return self.goal is None or self.goal.status != "complete"


def retry_budget(config: Config, model: SwitchableModel) -> Callable[[], int]:
    """How many attempts the current provider's retry policy allows."""
    from kun.model.retry import RetryPolicy

    def attempts() -> int:
        provider = config.providers.get(model.provider)
        configured = provider.retry.max_attempts if provider is not None else None
        return configured or RetryPolicy().max_attempts

    return attempts


async def run_prompt(options: RunOptions) -> RunResult:
    check_prompt(options.prompt)  # before a thread is created for it
    async with open_foreground(options, options.thread_id) as foreground:
        service, runtime = foreground.service, foreground.runtime
        terminal = open_terminal()
        if options.thread_id is not None:
            thread_id = options.thread_id
            if options.rebind is not None:
                note = await rebind_workspace(service, thread_id, options.rebind)
                if note is not None:
                    print(note, file=sys.stderr)
        else:
            settings = ThreadSettings(
                workspace=str(options.workspace.resolve()),
                provider=foreground.model.provider,
                model=foreground.model.model,
                approval_policy=options.approval or runtime.approval_policy,
            )
            thread_id = await service.create_thread(settings)
        if options.goal is not None:
            await set_goal(service, thread_id, options.goal, options.goal_budget)
        prompter = TtyPrompter(terminal) if terminal is not None else None
        view = _view(service, thread_id, prompter, as_json=options.json)
        new_thread = options.thread_id is None
        after = 0 if options.json and new_thread else service.state(thread_id).last_seq
        with notes_from_log(view.note, retry_budget(foreground.config, foreground.model)):
            turn = await (_drive if options.goal is None else drive_goal)(
                view,
                after,
                options.prompt,
                unattended=terminal is None,
                plan_mode=options.plan_mode,
            )
        if isinstance(view, JsonView):
            await view.drain()
        goal = service.state(thread_id).settings.goal
    if terminal is not None:
        terminal.close()
    return RunResult(thread_id, turn, goal)


def _view(
    service: TurnService, thread_id: str, prompter: TtyPrompter | None, *, as_json: bool
) -> LiveView:
    """The human view on stdout, or with ``--json`` the events there
    (:mod:`kun.cli.runjson`)."""
    if as_json:
        return JsonView(service, thread_id, sys.stdout.buffer, sys.stderr, prompter)
    spinner = sys.stdout.isatty()
    sink = PlainSink(sys.stdout, spinner=spinner, color=use_color(sys.stdout))
    return LiveView(service, thread_id, sink, prompter)


async def _drive(
    view: LiveView, after: int, prompt: str, *, unattended: bool, plan_mode: bool = False
) -> TurnState:
    """Start the turn and show it; a signal interrupts it and stops the view
    (a signal that comes while the turn is being started interrupts it as
    soon as it is)."""
    service, thread_id = view.service, view.thread_id
    started: list[str] = []
    signalled = anyio.Event()
    left = anyio.CancelScope()

    async def on_signal(signum: int) -> None:
        if signum != signal.SIGINT and started and waits_for_answer(service, thread_id):
            left.cancel()  # SIGTERM/SIGHUP at an approval: the turn waits (durable suspension)
        else:
            signalled.set()

    with left:
        async with anyio.create_task_group() as tg:
            await tg.start(watch, on_signal)
            turn_id = await service.start_turn(
                thread_id, prompt, disable_user_input=unattended, plan_mode=plan_mode
            )
            started.append(turn_id)
            turn = await show_turn(view, after, turn_id, signalled)
            tg.cancel_scope.cancel()
    if left.cancel_called:
        raise TurnLeftWaiting(thread_id, started[0])
    return turn


def waits_for_answer(service: TurnService, thread_id: str) -> bool:
    """Whether the thread's running turn only waits for the user's answer
    (:mod:`kun.domain.suspension`): stopping then leaves it waiting."""
    from kun.runtime.rearm import open_suspension

    return open_suspension(service.state(thread_id)) is not None


class TurnLeftWaiting(UserMistake):
    """kun was stopped while the turn waited for an approval or an answer:
    it is left waiting, for ``kun resume`` or ``kun serve`` to take up."""

    def __init__(self, thread_id: str, turn_id: str) -> None:
        super().__init__(
            f"stopped while turn {turn_id} waited for your answer; it still waits: "
            f"{pasteable('resume', thread_id[:12])} asks it again"
        )
