"""``kun run``: one turn from the terminal, live, on the home's threads or
on a ``kun serve``'s (``--server``): the same code, through
:class:`~kun.app.interface.Kun`.

The turn runs on the thread's model unless the user names another (the
thread records the change); approvals are asked on the controlling terminal
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
import msgspec

from kun.app.connect import LocalTarget, Target, open_kun
from kun.app.interface import Kun, TurnState
from kun.app.live import check_prompt, reachable, retry_attempts, waits_for_answer
from kun.app.overrides import RuntimeFlags
from kun.app.requests import CreateThread, Limits, Multitask, StartTurn, UpdateThread
from kun.cli.colors import use_color
from kun.cli.lognotes import notes_from_log
from kun.cli.options import pasteable
from kun.cli.run_config import config_note
from kun.cli.run_goal import drive_goal
from kun.cli.runjson import JsonView
from kun.cli.show_turn import show_turn
from kun.cli.terminal import LiveView, PlainSink
from kun.cli.tty import TtyPrompter, open_terminal, watch
from kun.contracts.threads import ApprovalPolicy, Goal
from kun.errors import UserMistake

__all__ = ["RunOptions", "RunResult", "TurnLeftWaiting", "run_prompt", "thread_changes"]


@dataclass(frozen=True)
class RunOptions:
    prompt: str
    thread_id: str | None
    provider: str | None
    model: str | None
    workspace: Path
    approval: ApprovalPolicy | None
    json: bool = False
    plan_mode: bool = False
    runtime: RuntimeFlags = field(default_factory=RuntimeFlags)
    goal: str | None = None
    goal_budget: int | None = None
    rebind: bool = False
    """``--workspace`` given with ``--thread``: the thread's workspace from now on."""
    multitask: Multitask = "reject"
    """What the turn does when the thread's turn is still running (``--multitask``)."""


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


def thread_changes(
    flags: RuntimeFlags,
    *,
    provider: str | None,
    model: str | None,
    approval: ApprovalPolicy | None = None,
) -> UpdateThread:
    """What the command line gives a thread: its provider, model and
    approval policy (recorded in its log), and the reasoning effort and
    limits its turns run with; only those given."""
    limits = Limits(
        max_steps=flags.max_steps,
        max_wall_seconds=flags.max_wall_seconds,
        max_cost_usd=flags.max_cost_usd,
        max_turn_tokens=flags.max_turn_tokens,
    )
    return UpdateThread(
        provider=provider,
        model=model,
        approval_policy=approval or flags.approval_policy,  # type: ignore[arg-type]
        reasoning_effort=flags.reasoning_effort,
        limits=None if limits == Limits() else limits,
    )


async def open_thread(
    kun: Kun, thread_id: str | None, changes: UpdateThread, workspace: Path, *, rebind: bool
) -> tuple[str, bool]:
    """The thread to run on and whether it is new: created with
    ``changes`` in ``workspace``, or ``thread_id`` changed as asked
    (``rebind``: its workspace becomes ``workspace``, said on stderr)."""
    folder = str(await anyio.Path(workspace).resolve())
    if thread_id is None:
        created = await kun.create_thread(
            CreateThread(
                workspace=folder,
                provider=changes.provider,
                model=changes.model,
                approval_policy=changes.approval_policy,
                reasoning_effort=changes.reasoning_effort,
                limits=changes.limits,
            )
        )
        return created.thread_id, True
    state = await kun.thread(thread_id)
    thread_id = state.thread_id
    old = state.settings.workspace
    if rebind and old != folder:
        changes = msgspec.structs.replace(changes, workspace=folder)
    if _given(changes):
        await kun.update_thread(thread_id, changes)
    if rebind and old != folder:
        print(f"thread {thread_id} now works in {folder} (was {old or 'unset'})", file=sys.stderr)
    return thread_id, False


def _given(changes: UpdateThread) -> dict[str, object]:
    return {
        name: value
        for name in changes.__struct_fields__
        if (value := getattr(changes, name)) is not None
    }


async def run_prompt(target: Target, options: RunOptions) -> RunResult:
    check_prompt(options.prompt)  # before a thread is created for it
    terminal = open_terminal()
    try:
        async with open_kun(target) as kun:
            changes = thread_changes(
                options.runtime,
                provider=options.provider,
                model=options.model,
                approval=options.approval,
            )
            thread_id, new = await open_thread(
                kun, options.thread_id, changes, options.workspace, rebind=options.rebind
            )
            if options.goal is not None:
                await kun.set_goal(thread_id, options.goal, token_budget=options.goal_budget)
            prompter = TtyPrompter(terminal) if terminal is not None else None
            view = _view(kun, thread_id, prompter, as_json=options.json)
            state = await kun.thread(thread_id)
            after = 0 if options.json and new else state.last_seq
            attempts = _retry_budget(target, state.settings.provider)
            with notes_from_log(view.note, attempts):
                turn = await (_drive if options.goal is None else drive_goal)(
                    view,
                    after,
                    StartTurn(
                        text=options.prompt,
                        disable_user_input=terminal is None,
                        plan_mode=options.plan_mode,
                        multitask=options.multitask,
                    ),
                )
            if isinstance(view, JsonView):
                await view.drain()
            goal = (await kun.thread(thread_id)).settings.goal
    finally:
        if terminal is not None:
            terminal.close()
    return RunResult(thread_id, turn, goal)


def _retry_budget(target: Target, provider: str | None) -> Callable[[], int]:
    """How many attempts the provider's retry policy allows, for the retry
    lines (only a turn run here logs its retries here)."""

    def attempts() -> int:
        if not isinstance(target, LocalTarget):
            return retry_attempts(None, provider)
        from kun.config import load_config

        return retry_attempts(load_config(target.config, home=target.home), provider)

    return attempts


def _view(kun: Kun, thread_id: str, prompter: TtyPrompter | None, *, as_json: bool) -> LiveView:
    """The human view on stdout, or with ``--json`` the events there
    (:mod:`kun.cli.runjson`)."""
    if as_json:
        return JsonView(kun, thread_id, sys.stdout.buffer, sys.stderr, prompter)
    spinner = sys.stdout.isatty()
    sink = PlainSink(sys.stdout, spinner=spinner, color=use_color(sys.stdout))
    return LiveView(kun, thread_id, sink, prompter)


async def _drive(view: LiveView, after: int, request: StartTurn) -> TurnState:
    """Start the turn and show it; a signal interrupts it and stops the view
    (a signal that comes while the turn is being started interrupts it as
    soon as it is). The feed is open before the turn starts, so nothing of
    it is missed."""
    kun, thread_id = view.kun, view.thread_id
    started: list[str] = []
    signalled = anyio.Event()
    left = anyio.CancelScope()

    async def on_signal(signum: int) -> None:
        if signum != signal.SIGINT and started and waits_for_answer(await kun.thread(thread_id)):
            left.cancel()  # SIGTERM/SIGHUP at an approval: the turn waits (durable suspension)
        else:
            signalled.set()

    if isinstance(view, JsonView):
        view.written = after
    with left:
        async with (
            view.feed(after) as events,
            reachable(kun, thread_id),
            anyio.create_task_group() as tg,
        ):
            await tg.start(watch, on_signal)
            turn_id = (await kun.start_turn(thread_id, request)).turn_id
            started.append(turn_id)
            config_note(kun, (await kun.thread(thread_id)).settings.workspace)
            turn = await show_turn(view, events, turn_id, signalled)
            tg.cancel_scope.cancel()
    if left.cancel_called:
        raise TurnLeftWaiting(thread_id, started[0])
    return turn


class TurnLeftWaiting(UserMistake):
    """kun was stopped while the turn waited for an approval or an answer:
    it is left waiting, for ``kun resume`` or ``kun serve`` to take up."""

    def __init__(self, thread_id: str, turn_id: str) -> None:
        super().__init__(
            f"stopped while turn {turn_id} waited for your answer; it still waits: "
            f"{pasteable('resume', thread_id[:12])} asks it again"
        )
