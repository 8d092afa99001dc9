"""The TurnService: the single writer of every thread (SPEC §5).

Every write to a thread goes through here, serialized per thread, as events
appended by the recorder (persist, then publish). ``start_turn`` records the
turn and returns at once; the turn runs as a task in the service's task
group. Nothing is ever deleted: rewind hides, fork copies, interrupt settles.

The service holds a thread's writer lock only while something writes it: a
turn from its start until it is settled (waiting for an approval or an
answer included: such a turn is still running here, and nobody else may
settle it), and each other write (an update, a title, a rewind or its undo,
a compaction starting, a fork's first open) for as long as it lasts
(:meth:`TurnService.holding`). Then the lock is released at once
(:meth:`kun.runtime.recorder.EventRecorder.release`), not after an idle
delay: another process (``kun serve`` and a terminal sharing a home) is
refused only while there is a real writer, and a delay would refuse it for
nothing. Re-claiming costs an open, a ``flock`` and a tail scan, tens of
microseconds per write outside a turn.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from functools import partial, wraps
from pathlib import Path
from typing import Any, TypeVar, cast

import anyio
import msgspec
from anyio.abc import TaskGroup
from msgspec import UNSET

from kun.contracts import events as ev
from kun.contracts.context import TurnContext
from kun.contracts.items import Attachment, UserMessage
from kun.contracts.threads import SideLink, ThreadSettings, TitleSource
from kun.domain.compaction import DEFAULT_COMPACT_AT, plan_compaction
from kun.domain.fork import fork_events
from kun.domain.recovery import RecoveryState
from kun.domain.repetition import RepetitionSettings
from kun.domain.resume_policy import ResumeSettings
from kun.domain.state import ThreadState, TurnState
from kun.domain.suspension import suspended_turns
from kun.domain.titles import title_changes, title_from_prompt
from kun.ids import new_id, new_thread_local_id
from kun.model.port import ModelClient
from kun.runtime.checkpoints import rewind_files, undo_rewind_files
from kun.runtime.compact_turn import run_compaction
from kun.runtime.context import Delegator, TurnHooks, TurnLimits, TurnRun, draft
from kun.runtime.control import TurnControl
from kun.runtime.errors import SeqOutOfRange, ThreadBusy, UnknownTurn, WorkspaceMissing
from kun.runtime.gates import Gate
from kun.runtime.loop import Outcome, run_turn, settle_events
from kun.runtime.orphans import orphan_events
from kun.runtime.project import read_turn_context
from kun.runtime.queue import (
    ModelFor,
    QueuedRun,
    cancel_event,
    check_room,
    next_queued,
    queued_event,
    queued_options,
    refuse_if_queued,
)
from kun.runtime.rearm import refuse_if_waiting
from kun.runtime.recorder import EventRecorder
from kun.runtime.restore_recovery import settle_restore
from kun.runtime.resume import GoalResumer, Sleep
from kun.runtime.sidefiles import SideFiles, copy_side_files, keep_attachments
from kun.runtime.titler import Titler
from kun.runtime.turn_input import check_prompt
from kun.store.errors import ThreadNotFound
from kun.tools.host import ToolHost

_log = logging.getLogger(__name__)
_SHIELD_SECONDS = 10.0
_F = TypeVar("_F", bound=Callable[..., Awaitable[Any]])


def _held(method: _F) -> _F:
    """A method writing the thread named by its first argument, holding it
    (:meth:`TurnService.holding`) for as long as it runs."""

    @wraps(method)
    async def held(self: TurnService, thread_id: str, *args: Any, **kwargs: Any) -> Any:
        async with self.holding(thread_id):
            return await method(self, thread_id, *args, **kwargs)

    return cast(_F, held)


class TurnService(TurnControl):
    def __init__(
        self,
        recorder: EventRecorder,
        task_group: TaskGroup,
        *,
        model: ModelClient | None = None,
        tools: ToolHost | None = None,
        limits: TurnLimits | None = None,
        system_prompt: str = "",
        reasoning_effort: str | None = None,
        project_context: bool = False,
        hooks: Sequence[TurnHooks] = (),
        context_windows: Callable[[str, str], int | None] | None = None,
        compact_at: float = DEFAULT_COMPACT_AT,
        repetition: RepetitionSettings | None = None,
        resume: ResumeSettings | None = None,
        sleep: Sleep | None = None,
        titler: Titler | None = None,
    ) -> None:
        """``project_context``: read the workspace's instructions file and
        the environment when each turn starts, record them in its
        ``turn_started`` and send them (:mod:`kun.runtime.project`).
        ``context_windows`` (provider and model to the model's
        ``max_context_tokens``, ``None``: unknown) and ``compact_at``
        (``[runtime] compact_at``) decide when a turn compacts its history
        (:mod:`kun.runtime.compact`). ``repetition`` (``[runtime]
        repetition_*``) tunes the round-outcome decisions
        (:mod:`kun.domain.recovery`). ``resume`` and ``sleep`` (a fake clock
        in tests) drive the goal resume timers (:mod:`kun.runtime.resume`),
        which :meth:`GoalResumer.close` on ``resumes`` cancels at shutdown."""
        self.recorder = recorder
        self._model = model
        self._tools = tools
        self.limits = limits or TurnLimits()
        self.system_prompt = system_prompt
        self.reasoning_effort = reasoning_effort
        self.project_context = project_context
        self.hooks = tuple(hooks)
        self.context_windows = context_windows
        self.compact_at = compact_at
        self.repetition = repetition
        self.titler = titler  # a model title for new threads (kun.runtime.titler)
        self.approvals = Gate("approval")
        self.questions = Gate("user input")
        self._tg = task_group
        self._locks: dict[str, anyio.Lock] = {}
        self._runs: dict[str, TurnRun] = {}
        self._holds: dict[str, int] = {}
        self._recovery: dict[str, RecoveryState] = {}
        self._queued: dict[tuple[str, str], QueuedRun] = {}
        self.queue_models: ModelFor | None = None
        """A client for a queued turn this process did not queue (left by
        one that died), from its recorded provider and model
        (:mod:`kun.runtime.queue`); unset: the service's model."""
        self.resumes = GoalResumer(self, task_group, settings=resume, sleep=sleep)
        self.delegation: Delegator | None = None
        """Runs ``delegate_task`` calls on side threads
        (:mod:`kun.runtime.delegation`); unset: the tool is not offered."""

    @property
    def model(self) -> ModelClient:
        if self._model is None:
            raise RuntimeError("this TurnService was built without a model: it cannot run turns")
        return self._model

    @property
    def tools(self) -> ToolHost:
        if self._tools is None:
            raise RuntimeError("this TurnService was built without tools: it cannot run turns")
        return self._tools

    # -- writing ---------------------------------------------------------------

    def _lock(self, thread_id: str) -> anyio.Lock:
        lock = self._locks.get(thread_id)
        if lock is None:
            lock = self._locks[thread_id] = anyio.Lock(fast_acquire=True)
        return lock

    async def write(
        self, thread_id: str, *events: ev.Event, durable: bool = True
    ) -> list[ev.Event]:
        async with self._lock(thread_id):
            written = await self.recorder.record(thread_id, *events, durable=durable)
        if thread_id not in self._runs and thread_id not in self._holds:
            await self._release(thread_id)
        return written

    @asynccontextmanager
    async def holding(self, thread_id: str) -> AsyncIterator[None]:
        """Keep the thread's writer lock (once taken) until the block ends;
        then release it unless a turn runs or another block holds it (see
        the module docstring)."""
        self._holds[thread_id] = self._holds.get(thread_id, 0) + 1
        try:
            yield
        finally:
            left = self._holds.pop(thread_id) - 1
            if left:
                self._holds[thread_id] = left
            elif thread_id not in self._runs:
                await self._release(thread_id)

    async def release_if_idle(self, thread_id: str) -> None:
        """Release the thread's writer lock unless something writes it now."""
        if thread_id not in self._runs and thread_id not in self._holds:
            await self._release(thread_id)

    async def _release(self, thread_id: str) -> None:
        with anyio.CancelScope(shield=True):
            try:
                await self.recorder.release(thread_id)
            except Exception:
                _log.exception("releasing the writer lock of thread %s failed", thread_id)

    async def _open(self, thread_id: str) -> ThreadState:
        if not self.recorder.claimed(thread_id):
            return await self.recorder.open(thread_id)
        return self.recorder.state(thread_id)

    def state(self, thread_id: str) -> ThreadState:
        return self.recorder.state(thread_id)

    async def open_thread(self, thread_id: str) -> ThreadState:
        """The thread's state, opening it for writing here if it is not."""
        return await self._open(thread_id)

    def running_turn(self, thread_id: str) -> str | None:
        run = self._runs.get(thread_id)
        return run.turn_id if run is not None else None

    def in_flight(self) -> set[str]:
        """Thread ids with a turn running in this process."""
        return set(self._runs)

    # -- threads ---------------------------------------------------------------

    async def create_thread(
        self, settings: ThreadSettings | None = None, *, thread_id: str | None = None
    ) -> str:
        thread_id = thread_id or new_id("thr")
        await self.write(thread_id, draft(ev.ThreadCreated, settings=settings or ThreadSettings()))
        return thread_id

    @_held
    async def update_thread(self, thread_id: str, **changes: Any) -> None:
        await self._open(thread_id)
        await self.write(thread_id, draft(ev.ThreadUpdated, **changes))

    @_held
    async def retitle(self, thread_id: str, title: str, source: TitleSource) -> bool:
        """Set the title unless the one it has may not be replaced by one
        from ``source`` (:mod:`kun.domain.titles`: the user's title is never
        replaced by an automatic one); returns whether it was set."""
        await self._open(thread_id)
        async with self._lock(thread_id):
            changes = title_changes(self.recorder.state(thread_id).settings, title, source)
            if changes:
                await self.recorder.record(thread_id, draft(ev.ThreadUpdated, **changes))
        return bool(changes)

    @_held
    async def rewind_thread(
        self, thread_id: str, before_turn_id: str, *, files: bool = False
    ) -> int:
        """Hide ``before_turn_id`` and every later turn; returns the rewind's
        seq (for undo). Refused while a turn runs. ``files``: also put the
        workspace's files back as they were (:mod:`kun.runtime.checkpoints`),
        under the thread's lock, so no turn starts while files change."""
        await self._open(thread_id)
        async with self._lock(thread_id):
            self._refuse_if_running(thread_id, "rewind")
            refuse_if_queued(self.recorder.state(thread_id), "rewind")
            await settle_restore(self.recorder, thread_id)
            state = self.recorder.state(thread_id)
            if _turn(state, before_turn_id) is None:
                raise UnknownTurn(thread_id, before_turn_id)
            restored = (
                await rewind_files(self.recorder, thread_id, before_turn_id) if files else None
            )
            (event,) = await self.recorder.record(
                thread_id, draft(ev.ThreadRewound, before_turn_id=before_turn_id, files=restored)
            )
        return event.seq

    @_held
    async def undo_rewind(self, thread_id: str, rewind_seq: int) -> None:
        """Bring back what the rewind at ``rewind_seq`` hid, and the files
        it restored (where nobody changed them since), under the lock too."""
        await self._open(thread_id)
        async with self._lock(thread_id):
            self._refuse_if_running(thread_id, "undo a rewind")
            refuse_if_queued(self.recorder.state(thread_id), "undo a rewind")
            await settle_restore(self.recorder, thread_id)
            restored = await undo_rewind_files(self.recorder, thread_id, rewind_seq)
            await self.recorder.record(
                thread_id, draft(ev.ThreadRewindUndone, rewind_seq=rewind_seq, files=restored)
            )

    async def fork_thread(self, source_id: str, up_to_seq: int | None = None) -> str:
        """A new thread whose history is ``source_id``'s up to ``up_to_seq``
        (default: now). Its log is written whole, then opened."""
        if self.recorder.is_open(source_id):
            await self.recorder.flush(source_id)
        store = self.recorder.store
        last = await store.last_seq(source_id)
        if up_to_seq is not None and up_to_seq > last:
            raise SeqOutOfRange(source_id, up_to_seq, last)
        limit = up_to_seq if up_to_seq is not None else last
        new_thread = new_id("thr")
        events = fork_events(store.read(source_id), new_thread, limit, self.recorder.clock())
        await anyio.to_thread.run_sync(
            copy_side_files, events, store.blobs(source_id), store.blobs(new_thread)
        )
        async with self.holding(new_thread):
            await store.append(new_thread, events, expected_seq=0)
            await self.recorder.open(new_thread)
        return new_thread

    def _refuse_if_running(self, thread_id: str, what: str) -> None:
        run = self._runs.get(thread_id)
        if run is not None:
            raise ThreadBusy(thread_id, run.turn_id, what)

    # -- turns -----------------------------------------------------------------

    @_held
    async def start_turn(
        self,
        thread_id: str,
        text: str,
        *,
        disable_user_input: bool = False,
        plan_mode: bool = False,
        attachments: Sequence[Attachment] = (),
        model: ModelClient | None = None,
        limits: TurnLimits | None = None,
        reasoning_effort: str | None = None,
        context_window: int | None = None,
        goal_resume: int = 0,
    ) -> str:
        """Record the turn and its user message, start it in the background,
        return its id at once. A turn the log still shows open is an orphan
        (this service is the thread's only writer and is not running it): it
        is settled as ``orphaned`` first, so two turns are never open. The
        first turn of an untitled thread titles it from ``text``. A
        blank prompt or an attachment that cannot be sent is refused first,
        and nothing is recorded (:mod:`kun.runtime.turn_input`); so is a
        thread whose workspace is not a folder here (``WorkspaceMissing``).
        ``model``, ``limits``, ``reasoning_effort`` and ``context_window``
        replace the service's for this turn only (a server runs each thread
        on its own model); without ``context_window`` the turn's model's
        is looked up in ``context_windows``. ``goal_resume`` marks a turn
        kun starts itself to continue the goal (its attempt number); any
        turn started drops the thread's pending resume. Refused
        (``ThreadBusy``) while a turn runs, waits for an answer, or turns
        wait in the thread's queue."""
        turn_id, _ = await self._begin(
            thread_id,
            text,
            queue=False,
            disable_user_input=disable_user_input,
            plan_mode=plan_mode,
            attachments=attachments,
            model=model,
            limits=limits,
            reasoning_effort=reasoning_effort,
            context_window=context_window,
            goal_resume=goal_resume,
        )
        return turn_id

    @_held
    async def enqueue_turn(
        self,
        thread_id: str,
        text: str,
        *,
        disable_user_input: bool = False,
        plan_mode: bool = False,
        attachments: Sequence[Attachment] = (),
        model: ModelClient | None = None,
        limits: TurnLimits | None = None,
        reasoning_effort: str | None = None,
        context_window: int | None = None,
        hold: bool = False,
    ) -> tuple[str, bool]:
        """As :meth:`start_turn`, except that while the thread's turn runs
        (or waits for an answer), or turns already wait, the turn is
        queued (``turn_queued``) instead of refused, to start when the
        turns before it have settled (:mod:`kun.runtime.queue`). Returns
        its id and whether it was queued. Decided under the thread's lock,
        so two turns sent at once to an idle thread start one and queue
        the other. ``QueueFull`` past ``MAX_QUEUED`` waiting turns.
        ``hold``: queue it even on an idle thread and start nothing (its
        workspace is not on this machine: a worker that reaches it will,
        :mod:`kun.server.cluster`)."""
        return await self._begin(
            thread_id,
            text,
            queue=True,
            hold=hold,
            disable_user_input=disable_user_input,
            plan_mode=plan_mode,
            attachments=attachments,
            model=model,
            limits=limits,
            reasoning_effort=reasoning_effort,
            context_window=context_window,
        )

    async def _begin(
        self,
        thread_id: str,
        text: str,
        *,
        queue: bool,
        disable_user_input: bool,
        plan_mode: bool,
        attachments: Sequence[Attachment],
        model: ModelClient | None,
        limits: TurnLimits | None,
        reasoning_effort: str | None,
        context_window: int | None,
        goal_resume: int = 0,
        hold: bool = False,
    ) -> tuple[str, bool]:
        check_prompt(text, attachments)
        model = model or self.model
        if context_window is None and self.context_windows is not None:
            context_window = self.context_windows(model.provider, model.model)
        limits = limits or self.limits
        effort = reasoning_effort if reasoning_effort is not None else self.reasoning_effort
        state = await self._open(thread_id)
        workspace = state.settings.workspace
        if workspace and not hold and not await anyio.Path(workspace).is_dir():
            raise WorkspaceMissing(thread_id, workspace)
        context = (
            None
            if hold
            else await self._turn_context(Path(workspace or "."), effort, state.settings)
        )
        attachments = await keep_attachments(self.recorder.store.blobs(thread_id), attachments)
        async with self._lock(thread_id):
            busy = await self._settle_leftovers(thread_id, "start another turn", queue=queue)
            busy = busy or hold
            turn_id = new_thread_local_id("turn")
            message = UserMessage(
                id=new_thread_local_id("msg"),
                text=text,
                attachments=tuple(attachments),
                goal_resume=goal_resume,
            )
            if busy:
                check_room(self.recorder.state(thread_id))
                queued = queued_event(
                    turn_id,
                    message,
                    model,
                    disable_user_input=disable_user_input,
                    plan_mode=plan_mode,
                    reasoning_effort=effort,
                )
                await self.recorder.record(thread_id, queued)
                self._queued[thread_id, turn_id] = QueuedRun(model, limits, context_window, effort)
                run = None
            else:
                self.resumes.clear(thread_id)
                settings = state.settings
                if not state.turns:
                    title = title_changes(settings, title_from_prompt(text), "prompt")
                    if title:
                        await self.recorder.record(thread_id, draft(ev.ThreadUpdated, **title))
                await self.recorder.record(
                    thread_id,
                    draft(
                        ev.TurnStarted,
                        turn_id,
                        provider=model.provider,
                        model=model.model,
                        disable_user_input=disable_user_input,
                        plan_mode=plan_mode,
                        context=context if context is not None else UNSET,
                    ),
                    draft(ev.ItemCompleted, turn_id, item=message),
                )
                run = self.new_run(
                    thread_id,
                    turn_id,
                    disable_user_input=disable_user_input,
                    model=model,
                    limits=limits,
                    context=context,
                    context_window=context_window,
                    reasoning_effort=effort,
                    recovery=self._next_recovery(thread_id),
                )
                self._runs[thread_id] = run
        if run is None:
            if not hold:
                await self.advance(thread_id)
            return turn_id, True
        self._tg.start_soon(self._drive, run)
        if self.titler is not None and not state.turns:
            self._tg.start_soon(self.titler, self, thread_id, model, text)
        return turn_id, False

    async def advance(self, thread_id: str) -> str | None:
        """Start the thread's next queued turn when no turn runs (or waits)
        on it: under its own id, with its recorded message and options
        (:mod:`kun.runtime.queue`). Returns its id, or ``None`` when none
        was started. Called when a turn settles, after an interrupt is
        recorded, and when a thread left with queued turns is opened."""
        try:
            async with self.holding(thread_id):
                state = await self._open(thread_id)
                turn = next_queued(state)
                if turn is None or thread_id in self._runs:
                    return None
                queued = self._queued.get((thread_id, turn.turn_id)) or self._leftover(
                    thread_id, turn
                )
                workspace = Path(state.settings.workspace or ".")
                context = await self._turn_context(
                    workspace, queued.reasoning_effort, state.settings
                )
                async with self._lock(thread_id):
                    now = next_queued(self.recorder.state(thread_id))
                    if thread_id in self._runs or now is None or now.turn_id != turn.turn_id:
                        return None
                    model = queued.model
                    run = self.new_run(
                        thread_id,
                        turn.turn_id,
                        disable_user_input=turn.disable_user_input,
                        model=model,
                        limits=queued.limits,
                        context=context,
                        context_window=queued.context_window,
                        reasoning_effort=queued.reasoning_effort,
                        recovery=self._next_recovery(thread_id),
                    )
                    await self.recorder.record(
                        thread_id,
                        draft(
                            ev.TurnStarted,
                            turn.turn_id,
                            provider=model.provider,
                            model=model.model,
                            disable_user_input=turn.disable_user_input,
                            plan_mode=turn.plan_mode,
                            context=context if context is not None else UNSET,
                        ),
                    )
                    self._queued.pop((thread_id, turn.turn_id), None)
                    self.resumes.clear(thread_id)
                    self._runs[thread_id] = run
                self._tg.start_soon(self._drive, run)
                return turn.turn_id
        except Exception:
            _log.exception("starting the next queued turn of thread %s failed", thread_id)
            return None

    def _leftover(self, thread_id: str, turn: TurnState) -> QueuedRun:
        """What a queued turn this process did not queue runs with: a
        client for its recorded provider and model, its recorded effort."""
        event = queued_options(self.recorder.store, thread_id, turn)
        effort = event.reasoning_effort if event is not None else None
        model = self.queue_models(turn.provider, turn.model) if self.queue_models else None
        return QueuedRun(
            model or self.model,
            reasoning_effort=effort if effort is not None else self.reasoning_effort,
        )

    async def cancel_queued(self, thread_id: str, turn_id: str) -> bool:
        """Cancel ``turn_id`` if it waits in the thread's queue: it settles
        (``turn_aborted``, reason ``cancelled``) without running. Whether
        it did; a thread where it does not wait is only read."""
        try:
            turn = _turn(await self.recorder.view(thread_id), turn_id)
        except ThreadNotFound:
            return False
        if turn is None or turn.status != "queued":
            return False
        async with self.holding(thread_id):
            await self._open(thread_id)
            async with self._lock(thread_id):
                turn = _turn(self.recorder.state(thread_id), turn_id)
                if turn is None or turn.status != "queued":
                    return False
                await self.recorder.record(thread_id, cancel_event(turn_id))
                self._queued.pop((thread_id, turn_id), None)
        return True

    @_held
    async def start_compaction(
        self, thread_id: str, *, model: ModelClient | None = None, context_window: int | None = None
    ) -> str | None:
        """Compact the history now, as its own short turn run in the
        background (:mod:`kun.runtime.compact_turn`); returns its id, or
        ``None`` when there is nothing to summarise yet. Refused while a
        turn runs; an orphaned turn is settled first, as ``start_turn`` does."""
        model = model or self.model
        if context_window is None and self.context_windows is not None:
            context_window = self.context_windows(model.provider, model.model)
        await self._open(thread_id)
        async with self._lock(thread_id):
            await self._settle_leftovers(thread_id, "compact")
            if plan_compaction(self.recorder.state(thread_id).visible_turns) is None:
                return None
            turn_id = new_thread_local_id("turn")
            await self.recorder.record(
                thread_id,
                draft(ev.TurnStarted, turn_id, provider=model.provider, model=model.model),
            )
            run = self.new_run(
                thread_id,
                turn_id,
                disable_user_input=True,
                model=model,
                context_window=context_window,
            )
            self._runs[thread_id] = run
        self._tg.start_soon(self._drive, run, run_compaction)
        return turn_id

    async def _settle_leftovers(self, thread_id: str, what: str, *, queue: bool = False) -> bool:
        """Before a new turn (under the thread's lock): refuse while a turn
        runs or waits for the user's answer (:mod:`kun.runtime.rearm`) or
        turns wait in the queue, and settle a turn a dead process left open
        as ``orphaned``, so two turns are never open. With ``queue``
        nothing is refused: returns whether the new turn must wait (a
        turn runs or waits for an answer, or turns are queued)."""
        if queue and thread_id in self._runs:
            return True
        if not queue:
            self._refuse_if_running(thread_id, what)
            refuse_if_waiting(self.recorder.state(thread_id), what)
        await settle_restore(self.recorder, thread_id)
        state = self.recorder.state(thread_id)
        waiting = set(suspended_turns(state)) if queue else set()
        orphans = orphan_events(state, waiting)
        if orphans:
            await self.recorder.record(thread_id, *orphans)
        state = self.recorder.state(thread_id)
        if queue:
            return state.running_turn is not None or bool(state.queued_turns)
        if state.queued_turns:
            self._tg.start_soon(self.advance, thread_id)
        refuse_if_queued(state, what)
        return False

    def new_run(
        self,
        thread_id: str,
        turn_id: str,
        *,
        disable_user_input: bool,
        model: ModelClient | None = None,
        limits: TurnLimits | None = None,
        context: TurnContext | None = None,
        context_window: int | None = None,
        reasoning_effort: str | None = None,
        recovery: RecoveryState | None = None,
    ) -> TurnRun:
        """A run of an open turn of an open thread, on this service's parts
        (``model``, ``limits``, ``reasoning_effort`` and ``context_window``
        as for :meth:`start_turn`; the effort defaults to the recorded
        context's)."""
        model = model or self.model
        if context_window is None and self.context_windows is not None:
            context_window = self.context_windows(model.provider, model.model)
        settings = self.recorder.state(thread_id).settings
        link = settings.side_link
        return TurnRun(
            thread_id=thread_id,
            turn_id=turn_id,
            workspace=Path(settings.workspace or "."),
            policy=settings.approval_policy,
            disable_user_input=disable_user_input,
            model=model,
            tools=self.tools,
            limits=limits or self.limits,
            write=lambda *events, durable=True: self.write(thread_id, *events, durable=durable),
            state=lambda: self.recorder.state(thread_id),
            approvals=self.approvals,
            questions=self.questions,
            system_prompt=self._system_prompt(settings),
            context=context,
            side_files=SideFiles(self.recorder.store.blobs(thread_id)),
            reasoning_effort=reasoning_effort
            if reasoning_effort is not None
            else (context.reasoning_effort if context is not None else None),
            context_window=context_window,
            compact_at=self.compact_at,
            recovery=recovery or RecoveryState.initial(self.repetition),
            delegation=self.delegation,
            link=link,
            mirror=None if link is None else partial(self._mirror, link),
        )

    def _system_prompt(self, settings: ThreadSettings | None) -> str:
        """The service's system prompt; a side thread's agent's, from its link."""
        link = None if settings is None else settings.side_link
        if link is None or self.delegation is None:
            return self.system_prompt
        return self.delegation.system_prompt(link, self.system_prompt)

    async def _mirror(self, link: SideLink, event: ev.Event) -> None:
        """Record ``event`` (a side thread's question or its answer) in the
        parent's turn that the link names, while that turn runs here and,
        for an answer, still shows the question (:mod:`kun.runtime.mirror`)."""
        parent = self._runs.get(link.thread_id)
        if parent is None or parent.turn_id != link.turn_id:
            return
        state = self.recorder.state(link.thread_id)
        if isinstance(event, ev.ApprovalResolved):
            if event.approval_id not in state.pending_approvals:
                return
        elif isinstance(event, ev.UserInputResolved):
            if event.request_id not in state.pending_user_inputs:
                return
        await self.write(link.thread_id, msgspec.structs.replace(event, turn_id=link.turn_id))

    def launch(self, run: TurnRun, body: Callable[[TurnRun], Awaitable[Outcome]]) -> None:
        """Run ``run`` in the background as this thread's turn, settled like
        every turn (``body`` is its loop)."""
        self._refuse_if_running(run.thread_id, "resume a turn")
        self._runs[run.thread_id] = run
        self._tg.start_soon(self._drive, run, body)

    async def _turn_context(
        self, workspace: Path, effort: str | None, settings: ThreadSettings | None = None
    ) -> TurnContext | None:
        """The turn's context, read off the event loop (the file may sit on
        a slow disk); the date is the recorder's clock's, local. A side
        thread's system prompt is its agent's (``settings``)."""
        if not self.project_context:
            return None
        today = datetime.fromtimestamp(self.recorder.clock() / 1000).date()
        return await anyio.to_thread.run_sync(
            partial(
                read_turn_context,
                workspace,
                system_prompt=self._system_prompt(settings),
                today=today,
                reasoning_effort=effort,
            )
        )

    async def _drive(
        self, run: TurnRun, body: Callable[[TurnRun], Awaitable[Outcome]] = run_turn
    ) -> None:
        """Run the turn and settle it; then start the thread's next queued
        turn, unless the service is stopping (its task group cancelled: the
        queue waits for the next writer) or the turn was interrupted (the
        interrupt records its abort first, then starts the next)."""
        status = "failed"
        stopping = False
        try:
            outcome = await body(run)
            status = "aborted" if run.aborted else outcome.status
            if outcome.status != "aborted" and not run.aborted:
                with anyio.move_on_after(_SHIELD_SECONDS, shield=True):
                    await self.write(run.thread_id, *settle_events(run, outcome))
        except anyio.get_cancelled_exc_class():
            stopping = True
            raise
        except Exception:
            _log.exception("settling turn %s of thread %s failed", run.turn_id, run.thread_id)
        finally:
            with anyio.move_on_after(_SHIELD_SECONDS, shield=True):
                await self._sync_turn(run)
                await self._call_hooks("bookkeeping", run, status)
                await self.resumes.after_turn(run)
            run.steering.seal()
            if self._runs.get(run.thread_id) is run:
                del self._runs[run.thread_id]
            self._keep_recovery(run)
            if not stopping and not run.aborted:
                with anyio.move_on_after(_SHIELD_SECONDS, shield=True):
                    await self.advance(run.thread_id)
            await self.release_if_idle(run.thread_id)
            run.done.set()
            with anyio.move_on_after(_SHIELD_SECONDS, shield=True):
                await self._call_hooks("turn_ended", run, status)

    def _next_recovery(self, thread_id: str) -> RecoveryState:
        """A new turn's round-outcome state: under a goal, the repetition
        tracker of the goal's last turn, so a status repeated across resumed
        turns is still caught (:mod:`kun.domain.recovery`)."""
        prior = self._recovery.get(thread_id)
        return prior.for_new_turn() if prior is not None else RecoveryState.initial(self.repetition)

    def _keep_recovery(self, run: TurnRun) -> None:
        try:
            goal = self.recorder.state(run.thread_id).settings.goal
        except Exception:
            _log.exception("reading the goal of thread %s failed", run.thread_id)
            goal = None
        if goal is not None and goal.status == "active":
            self._recovery[run.thread_id] = run.recovery
        else:
            self._recovery.pop(run.thread_id, None)

    async def _sync_turn(self, run: TurnRun) -> None:
        """Make the whole turn durable before it counts as ended: a tool
        result is group committed (:mod:`kun.runtime.dispatch`), and a turn
        whose settling failed or was interrupted may have no durable write
        after it. Free when the settling write already synced."""
        try:
            await self.recorder.store.sync(run.thread_id)
        except Exception:
            _log.exception("syncing turn %s of thread %s failed", run.turn_id, run.thread_id)

    async def _call_hooks(self, name: str, run: TurnRun, status: str) -> None:
        for hook in self.hooks:
            try:
                await getattr(hook, name)(run, status)
            except Exception:
                _log.exception("turn hook %s.%s failed", type(hook).__name__, name)


def _turn(state: ThreadState, turn_id: str) -> TurnState | None:
    return next((t for t in state.turns if t.turn_id == turn_id), None)
