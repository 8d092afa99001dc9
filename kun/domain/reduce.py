"""Reducers: the thread's state is a left fold over its events.

``replay(events)`` and ``reduce(state, event)`` are pure: the result depends
only on their arguments (no clock, IO, randomness or global state). The fold
(``Projector``) owns mutable scratch state for speed and hands out immutable
``ThreadState`` snapshots; dispatch is a dict keyed by event type.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import msgspec

from kun.contracts import events as ev
from kun.contracts.items import (
    Approval,
    AssistantReasoning,
    AssistantText,
    ToolCall,
    UserInput,
    WarningItem,
)
from kun.contracts.threads import Goal
from kun.domain.errors import ProjectionError
from kun.domain.goals import charge_turn, goal_active, same_goal
from kun.domain.item_handlers import ItemHandlers
from kun.domain.state import (
    ForkOrigin,
    Imported,
    Repair,
    Rewind,
    SessionCheckpoint,
    ThreadState,
    ThreadWarning,
    TurnError,
    TurnState,
)
from kun.domain.turn_fold import TurnFold, UsageSum

_replace = msgspec.structs.replace
_SETTING_FIELDS = (
    "workspace",
    "provider",
    "model",
    "approval_policy",
    "title",
    "title_auto",
    "title_source",
    "goal",
    "todos",
    "hidden",
    "always_allow",
)


class Projector(ItemHandlers):
    """A running fold over one thread's events.

    ``apply`` validates an event before changing anything, so an event that
    raises ``ProjectionError`` leaves the fold as it was. Thread-level fields
    live in plain attributes and become a ``ThreadState`` only in
    ``snapshot``: a million-event replay must not build a million snapshots.
    """

    def __init__(self, state: ThreadState | None = None) -> None:
        state = state if state is not None else ThreadState(thread_id="")
        self._state = state
        self._dirty = False
        self._thread_id = state.thread_id
        self._last_seq = state.last_seq
        self._created_at = state.created_at
        self._updated_at = state.updated_at
        self._settings = state.settings
        self._usage_total = UsageSum(state.usage)
        self._warnings = list(state.warnings)
        self._forked_from = state.forked_from
        self._rewinds = list(state.rewinds)
        self._restoring = state.restoring
        self._imported_through = state.imported_through
        self._imported = state.imported
        self._repairs = list(state.repairs)
        self._late_events = state.late_events
        self._checkpoint = state.delegated_checkpoint
        self._turns: dict[str, TurnFold] = {t.turn_id: TurnFold(t) for t in state.turns}
        self._order: list[TurnFold] = list(self._turns.values())
        self._released = 0
        self._approvals: dict[str, str] = {}
        self._inputs: dict[str, str] = {}
        for fold in self._turns.values():
            for item in fold.items:
                if item.status == "pending" and isinstance(item, Approval):
                    self._approvals[item.id] = fold.base.turn_id
                elif item.status == "pending" and isinstance(item, UserInput):
                    self._inputs[item.id] = fold.base.turn_id

    def apply(self, event: ev.Event) -> None:
        self.apply_all((event,))

    def apply_all(self, events: Iterable[ev.Event]) -> None:
        handlers = _HANDLERS
        turns = self._turns
        streamed = _STREAMED_TEXT
        call_delta = ev.ToolCallDelta
        item_events = _ITEM_EVENTS
        completed = ev.ItemCompleted
        usage = ev.Usage
        total = self._usage_total
        last_seq = self._last_seq
        last: ev.Event | None = None
        thread_id = self._thread_id
        try:
            for event in events:
                seq = event.seq
                if seq <= last_seq:
                    raise ProjectionError(seq, f"seq {seq} is not after the last seq {last_seq}")
                if event.thread_id != thread_id:
                    thread_id = self._adopt_thread(event, thread_id)
                cls = type(event)
                # Most of a log, inlined for an open turn: a fragment for an
                # item that already has fragments of its type (the turn's
                # cached snapshot is already invalid: freeze() empties
                # ``pending``) or for a new item, an item placed whole, a
                # usage event. Anything else, or anything these refuse,
                # takes the handler.
                fold = turns.get(event.turn_id)  # type: ignore[arg-type]
                if fold is not None and fold.open:
                    if cls in streamed:
                        kind = streamed[cls]
                        frags = fold.pending.get(event.item_id) or fold.first_fragments(  # type: ignore[union-attr]
                            event.item_id,  # type: ignore[union-attr]
                            kind,
                        )
                        if frags is not None and frags.kind is kind:
                            frags.parts.append(event.text)  # type: ignore[union-attr]
                            last_seq = seq
                            last = event
                            continue
                    elif cls is call_delta:
                        frags = fold.pending.get(event.item_id) or fold.first_fragments(  # type: ignore[union-attr]
                            event.item_id,  # type: ignore[union-attr]
                            ToolCall,
                            event.call_id,  # type: ignore[union-attr,arg-type]
                        )
                        if frags is not None and frags.kind is ToolCall:
                            frags.parts.append(event.arguments)  # type: ignore[union-attr]
                            frags.names.append(event.name)  # type: ignore[union-attr]
                            last_seq = seq
                            last = event
                            continue
                    elif cls in item_events and (
                        cls is not completed
                        or (event.text_from_deltas is None and not event.arguments_from_text)  # type: ignore[union-attr]
                    ):
                        item = event.item  # type: ignore[union-attr]
                        index = fold.index
                        if item.id not in index:
                            index[item.id] = len(fold.items)
                            fold.items.append(item)
                            fold.frozen = None
                            last_seq = seq
                            last = event
                            continue
                        if fold.place(item):
                            last_seq = seq
                            last = event
                            continue
                    elif cls is usage:
                        fold.usage.add(event.usage)  # type: ignore[union-attr]
                        fold.frozen = None
                        total.add(event.usage)  # type: ignore[union-attr]
                        last_seq = seq
                        last = event
                        continue
                handlers[cls](self, event)
                last_seq = seq
                last = event
        finally:
            if last is not None:
                self._last_seq = last_seq
                self._updated_at = last.at
                self._dirty = True
            elif not last_seq:
                self._thread_id = ""

    def _adopt_thread(self, event: ev.Event, thread_id: str) -> str:
        """The thread id of a fold that had none yet; an event of another
        thread is refused."""
        if thread_id:
            raise ProjectionError(
                event.seq, f"event of thread {event.thread_id!r} in thread {thread_id!r}"
            )
        self._thread_id = event.thread_id
        return event.thread_id

    @property
    def last_seq(self) -> int:
        """The seq of the last event applied (after a ``ProjectionError``: the
        last one before the event refused)."""
        return self._last_seq

    def snapshot(self) -> ThreadState:
        if self._dirty:
            self._state = ThreadState(
                thread_id=self._thread_id,
                last_seq=self._last_seq,
                created_at=self._created_at,
                updated_at=self._updated_at,
                settings=self._settings,
                turns=tuple(fold.freeze() for fold in self._turns.values()),
                usage=self._usage_total.totals(),
                pending_approvals=tuple(self._approvals),
                pending_user_inputs=tuple(self._inputs),
                warnings=tuple(self._warnings),
                forked_from=self._forked_from,
                rewinds=tuple(self._rewinds),
                restoring=self._restoring,
                imported_through=self._imported_through,
                imported=self._imported,
                repairs=tuple(self._repairs),
                late_events=self._late_events,
                delegated_checkpoint=self._checkpoint,
            )
            self._dirty = False
        return self._state

    def settled_since(self, start: int) -> list[TurnState]:
        """The turns from the ``start``-th (0-based, in start order) up to
        the first one still open. Nothing but a rewind changes a settled
        turn (late events are counted, not applied), so a printer that knows
        the log holds no rewind may show these at once."""
        settled: list[TurnState] = []
        order = self._order
        while start < len(order) and not order[start].open:
            settled.append(order[start].freeze())
            start += 1
        return settled

    def release(self, count: int) -> None:
        """Forget the items of the first ``count`` turns, which must be
        settled: a streaming printer that has shown them keeps the fold's
        memory flat. Snapshots show those turns without items from now on,
        so only a fold that will never be continued or written from may
        release."""
        for fold in self._order[self._released : count]:
            if fold.open:
                raise ValueError(f"turn {fold.base.turn_id!r} is still open")
            fold.items = []
            fold.index = {}
            fold.pending.clear()
            fold.frozen = None
            self._dirty = True
        self._released = max(self._released, count)

    # -- thread ----------------------------------------------------------------

    def _thread_created(self, e: ev.ThreadCreated) -> None:
        if self._created_at is not None:
            raise ProjectionError(e.seq, "thread_created after the thread was created")
        self._settings = e.settings
        self._created_at = e.at

    def _thread_updated(self, e: ev.ThreadUpdated) -> None:
        changes = {
            name: value
            for name in _SETTING_FIELDS
            if (value := getattr(e, name)) is not msgspec.UNSET
        }
        before = self._settings.goal
        after = changes.get("goal", before)
        if goal_active(before) and isinstance(after, Goal) and not goal_active(after):
            changes["goal"] = self._charge_open_turns(before, after, e.at)  # type: ignore[arg-type]
        self._settings = _replace(self._settings, **changes)

    def _charge_open_turns(self, before: Goal, after: Goal, at: int) -> Goal:
        """A goal that stops being active (completed, blocked, paused) is
        charged with the open turns up to now: they ran for it so far."""
        if not same_goal(before, after):
            return after
        for fold in self._turns.values():
            if fold.open and fold.base.status != "queued":
                after = charge_turn(
                    after, fold.base.started_at, at, fold.usage.totals(), timed=True
                )
        return after

    def _thread_forked(self, e: ev.ThreadForked) -> None:
        """A cut turn ends at the fork point (``source_at``), not when the fork
        was made; forks written before ``source_at`` end it at ``at``."""
        cut = e if e.source_at is None else _replace(e, at=e.source_at)
        for fold in self._turns.values():
            if not fold.settled:
                self._settle(fold, cut, "aborted", abort_reason="forked")
        self._forked_from = ForkOrigin(thread_id=e.source_thread_id, seq=e.source_seq)

    def _thread_rewound(self, e: ev.ThreadRewound) -> None:
        folds = list(self._turns.values())
        start = next((i for i, f in enumerate(folds) if f.base.turn_id == e.before_turn_id), None)
        if start is None:
            raise ProjectionError(e.seq, f"rewind to unknown turn {e.before_turn_id!r}")
        hidden = []
        for fold in folds[start:]:
            if fold.base.hidden_by is None:
                fold.update(hidden_by=e.seq)
                hidden.append(fold.base.turn_id)
        rewind = Rewind(seq=e.seq, before_turn_id=e.before_turn_id, hidden_turn_ids=tuple(hidden))
        if e.files is not None:
            rewind = _replace(rewind, files=e.files)
            self._restoring = msgspec.UNSET
        self._rewinds.append(rewind)

    def _thread_rewind_undone(self, e: ev.ThreadRewindUndone) -> None:
        rewinds = self._rewinds
        i = next((i for i, r in enumerate(rewinds) if r.seq == e.rewind_seq), None)
        if i is None:
            raise ProjectionError(e.seq, f"no rewind at seq {e.rewind_seq} to undo")
        if rewinds[i].undone_at_seq is not None:
            self._late()
            return
        for fold in self._turns.values():
            if fold.base.hidden_by == e.rewind_seq:
                fold.update(hidden_by=None)
        rewinds[i] = _replace(rewinds[i], undone_at_seq=e.seq)
        if e.files is not None:
            rewinds[i] = _replace(rewinds[i], undo_files=e.files)
            self._restoring = msgspec.UNSET

    def _files_restore_started(self, e: ev.FilesRestoreStarted) -> None:
        self._restoring = e

    def _thread_imported(self, e: ev.ThreadImported) -> None:
        self._imported_through = e.seq
        self._imported = Imported(source=e.source, workspace=e.workspace)
        if e.workspace is not None:
            self._settings = _replace(self._settings, workspace=e.workspace)

    def _log_repaired(self, e: ev.LogRepaired) -> None:
        repair = Repair(seq=e.seq, dropped_bytes=e.dropped_bytes, line=e.line, reason=e.reason)
        self._repairs.append(repair)

    # -- turn lifecycle --------------------------------------------------------

    def _turn_queued(self, e: ev.TurnQueued) -> None:
        """A turn waiting for the running one: it holds its user message
        until its ``turn_started``. Cancelling it (interrupting it while it
        waits) is a ``turn_aborted`` with reason ``cancelled``
        (:data:`~kun.domain.state.QUEUE_CANCELLED`): the event every
        interrupt records, so every reader already settles it, with a reason
        that tells a turn that never ran from one stopped midway (a thread's
        status skips it). It ends ``aborted`` with its message kept."""
        if e.turn_id is None:
            raise ProjectionError(e.seq, "turn_queued has no turn_id")
        if e.turn_id in self._turns:
            raise ProjectionError(e.seq, f"turn {e.turn_id!r} queued twice")
        self._turns[e.turn_id] = fold = TurnFold(
            TurnState(
                turn_id=e.turn_id,
                status="queued",
                started_seq=e.seq,
                started_at=e.at,
                provider=e.provider,
                model=e.model,
                disable_user_input=e.disable_user_input,
                plan_mode=e.plan_mode,
                items=(e.message,),
            )
        )
        self._order.append(fold)

    def _turn_started(self, e: ev.TurnStarted) -> None:
        if e.turn_id is None:
            raise ProjectionError(e.seq, "turn_started has no turn_id")
        queued = self._turns.get(e.turn_id)
        if queued is not None and queued.base.status == "queued":
            queued.update(
                status="running",
                started_seq=e.seq,
                started_at=e.at,
                provider=e.provider,
                model=e.model,
                disable_user_input=e.disable_user_input,
                plan_mode=e.plan_mode,
            )
            return
        if queued is not None:
            raise ProjectionError(e.seq, f"turn {e.turn_id!r} started twice")
        self._turns[e.turn_id] = fold = TurnFold(
            TurnState(
                turn_id=e.turn_id,
                status="running",
                started_seq=e.seq,
                started_at=e.at,
                provider=e.provider,
                model=e.model,
                disable_user_input=e.disable_user_input,
                plan_mode=e.plan_mode,
            )
        )
        self._order.append(fold)

    def _turn_steered(self, e: ev.TurnSteered) -> None:
        fold = self._open_turn(e)
        if fold is not None:
            fold.steered += 1
            fold.frozen = None

    def _pipeline_stage(self, e: ev.PipelineStage) -> None:
        fold = self._open_turn(e)
        if fold is not None:
            fold.last_stage = e.stage
            fold.frozen = None

    def _delegated_runtime(self, e: ev.DelegatedRuntime) -> None:
        fold = self._open_turn(e)
        if fold is not None:
            fold.delegated = e.mode
            fold.frozen = None

    def _delegated_checkpoint(self, e: ev.DelegatedCheckpoint) -> None:
        """Thread-level: the session the next delegated turn may resume. It
        is kept whatever follows; whether it still holds the history is the
        resume decision's to judge from what came after its ``seq``."""
        self._checkpoint = SessionCheckpoint(
            seq=e.seq,
            turn_id=e.turn_id,
            engine=e.engine,
            session_id=e.session_id,
            provider=e.provider,
            workspace=e.workspace,
        )
        self._dirty = True

    def _tool_storm_suppressed(self, e: ev.ToolStormSuppressed) -> None:
        fold = self._open_turn(e)
        if fold is not None:
            fold.storms_suppressed += 1
            fold.frozen = None

    def _turn_completed(self, e: ev.TurnCompleted) -> None:
        fold = self._open_turn(e)
        if fold is not None:
            self._settle(fold, e, "completed", stop_reason=e.stop_reason)

    def _turn_failed(self, e: ev.TurnFailed) -> None:
        fold = self._open_turn(e)
        if fold is not None:
            error = TurnError(code=e.code, message=e.message, severity=e.severity)
            self._settle(fold, e, "failed", error=error)

    def _turn_aborted(self, e: ev.TurnAborted) -> None:
        fold = self._open_turn(e)
        if fold is not None:
            self._settle(fold, e, "aborted", abort_reason=e.reason, discard=e.discard)

    def _settle(
        self,
        fold: TurnFold,
        e: ev.EventBase,
        status: str,
        *,
        error: TurnError | None = None,
        discard: bool = False,
        **changes: object,
    ) -> None:
        orphaned = error is not None and error.code == "orphaned"
        approvals, inputs = fold.seal(status, orphaned)
        for approval_id in approvals:
            self._approvals.pop(approval_id, None)
        for request_id in inputs:
            self._inputs.pop(request_id, None)
        discarded = fold.discard_generated() if discard else 0
        goal = self._settings.goal
        if goal is not None and goal_active(goal) and fold.base.status != "queued":
            goal = charge_turn(
                goal, fold.base.started_at, e.at, fold.usage.totals(), timed=not orphaned
            )
            self._settings = _replace(self._settings, goal=goal)
        fold.update(
            status=status,
            ended_at=e.at,
            error=error,
            discarded_items=discarded,
            tools_in_flight=(),
            **changes,
        )

    # -- accounting and diagnostics --------------------------------------------

    def _usage(self, e: ev.Usage) -> None:
        """A call counts in the thread's total wherever it falls, and in its
        turn's only while the turn is open: a settled turn is final (SPEC
        §4 rule 4), so a late usage event is counted as late there."""
        if e.turn_id is not None:
            fold = self._turn(e)
            if fold.open:
                fold.usage.add(e.usage)
                fold.frozen = None
            else:
                self._late()
        self._usage_total.add(e.usage)

    def _warning(self, e: ev.WarningEvent) -> None:
        fold = self._turns.get(e.turn_id) if e.turn_id is not None else None
        if fold is not None and fold.open:
            fold.put(WarningItem(id=f"warning-{e.seq}", code=e.code, message=e.message))
            return
        warning = ThreadWarning(seq=e.seq, code=e.code, message=e.message)
        self._warnings.append(warning)


_HANDLERS: dict[type, Callable[[Projector, Any], None]] = {
    ev.ThreadCreated: Projector._thread_created,
    ev.ThreadUpdated: Projector._thread_updated,
    ev.ThreadForked: Projector._thread_forked,
    ev.ThreadRewound: Projector._thread_rewound,
    ev.ThreadRewindUndone: Projector._thread_rewind_undone,
    ev.FilesRestoreStarted: Projector._files_restore_started,
    ev.LogRepaired: Projector._log_repaired,
    ev.ThreadImported: Projector._thread_imported,
    ev.TurnStarted: Projector._turn_started,
    ev.TurnQueued: Projector._turn_queued,
    ev.TurnSteered: Projector._turn_steered,
    ev.PipelineStage: Projector._pipeline_stage,
    ev.DelegatedRuntime: Projector._delegated_runtime,
    ev.DelegatedCheckpoint: Projector._delegated_checkpoint,
    ev.ToolStormSuppressed: Projector._tool_storm_suppressed,
    ev.TurnCompleted: Projector._turn_completed,
    ev.TurnFailed: Projector._turn_failed,
    ev.TurnAborted: Projector._turn_aborted,
    ev.ItemCreated: Projector._item,
    ev.ItemUpdated: Projector._item,
    ev.ItemCompleted: Projector._item,
    ev.AssistantTextDelta: Projector._text_delta,
    ev.AssistantReasoningDelta: Projector._reasoning_delta,
    ev.ToolCallDelta: Projector._tool_call_delta,
    ev.ToolCallStarted: Projector._tool_call_started,
    ev.SubagentStarted: Projector._subagent_started,
    ev.ToolCallFinished: Projector._tool_call_finished,
    ev.ApprovalRequested: Projector._approval_requested,
    ev.ApprovalResolved: Projector._approval_resolved,
    ev.UserInputRequested: Projector._user_input_requested,
    ev.UserInputResolved: Projector._user_input_resolved,
    ev.Usage: Projector._usage,
    ev.WarningEvent: Projector._warning,
}


_STREAMED_TEXT: dict[type, type] = {
    ev.AssistantTextDelta: AssistantText,
    ev.AssistantReasoningDelta: AssistantReasoning,
}
_ITEM_EVENTS = frozenset({ev.ItemCreated, ev.ItemUpdated, ev.ItemCompleted})


def replay(events: Iterable[ev.Event]) -> ThreadState:
    """The state a log describes."""
    projector = Projector()
    projector.apply_all(events)
    return projector.snapshot()


def fold(state: ThreadState, events: Iterable[ev.Event]) -> ThreadState:
    """``state`` after ``events``: ``fold(replay(a), b) == replay(a + b)``."""
    projector = Projector(state)
    projector.apply_all(events)
    return projector.snapshot()


def reduce(state: ThreadState, event: ev.Event) -> ThreadState:
    """``state`` after one event."""
    return fold(state, (event,))
