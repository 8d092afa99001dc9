"""Projections: the immutable snapshots reducers hand to callers.

Everything here is rebuilt from the log. A snapshot holds everything the fold
needs to continue from it, so ``fold(replay(a), b) == replay(a + b)``.
"""

from __future__ import annotations

from typing import Literal

import msgspec
from msgspec import UNSET, UnsetType

from kun.contracts.events import FilesRestore, FilesRestoreStarted
from kun.contracts.items import Item, Severity
from kun.contracts.threads import ThreadSettings
from kun.contracts.usage import UsageTotals

TurnStatus = Literal["queued", "running", "completed", "failed", "aborted"]
TERMINAL_TURN_STATUSES: frozenset[str] = frozenset({"completed", "failed", "aborted"})
QUEUE_CANCELLED = "cancelled"
"""The ``turn_aborted`` reason of a queued turn cancelled before it ran."""


class TurnError(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    code: str
    message: str
    severity: Severity = "error"


class TurnState(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One turn. ``hidden_by`` is the seq of the rewind that hides it;
    ``tools_in_flight`` are tool-call item ids that started executing and have
    not finished (their side effects may exist). A ``queued`` turn holds
    only its user message; its ``started_seq`` and ``started_at`` are its
    ``turn_queued``'s until its ``turn_started`` replaces them (so a
    duration is the time it ran, not the time it waited)."""

    turn_id: str
    status: TurnStatus
    started_seq: int
    started_at: int
    ended_at: int | None = None
    provider: str | None = None
    model: str | None = None
    disable_user_input: bool = False
    plan_mode: bool = False
    items: tuple[Item, ...] = ()
    usage: UsageTotals = UsageTotals()
    error: TurnError | None = None
    stop_reason: str | None = None
    abort_reason: str | None = None
    discarded_items: int = 0
    steered: int = 0
    storms_suppressed: int = 0
    last_stage: str | None = None
    delegated: str | None = None
    tools_in_flight: tuple[str, ...] = ()
    hidden_by: int | None = None

    @property
    def settled(self) -> bool:
        return self.status in TERMINAL_TURN_STATUSES

    @property
    def duration_ms(self) -> int | None:
        return None if self.ended_at is None else self.ended_at - self.started_at


class ForkOrigin(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    thread_id: str
    seq: int


class Imported(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """Where the latest ``thread_imported`` says the thread came from
    (``bundle``, ``codex``, ``claude-code``) and the workspace it gave it
    (``None``: the log's own)."""

    source: str
    workspace: str | None = None


class Rewind(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """``files``: what the rewind did to the workspace's files (unset: it
    left them alone, and the projection reads as it did before files could
    be restored); ``undo_files``: what undoing it put back."""

    seq: int
    before_turn_id: str
    hidden_turn_ids: tuple[str, ...]
    undone_at_seq: int | None = None
    files: FilesRestore | UnsetType = UNSET
    undo_files: FilesRestore | UnsetType = UNSET


class Repair(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    seq: int
    dropped_bytes: int
    line: int
    reason: str


class ThreadWarning(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    seq: int
    code: str
    message: str


class SessionCheckpoint(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """The latest ``delegated_checkpoint``: the delegated engine's session
    that held the thread's history when the turn ``turn_id`` completed
    (event ``seq``)."""

    seq: int
    turn_id: str | None
    engine: str
    session_id: str
    provider: str | None = None
    workspace: str = ""


class ThreadState(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """A thread as its log says it is, up to ``last_seq``.

    ``turns`` lists every turn in start order, hidden ones included (see
    ``visible_turns``). ``usage`` counts every model call of the thread,
    including calls of hidden turns and calls outside any turn: money spent
    stays spent. ``late_events`` counts events that arrived for a turn or an
    item already final; they are kept in the log and change nothing.
    ``restoring``: a file restore whose intent is logged and whose outcome
    is not (kun was killed while it changed files), for reconciliation;
    unset otherwise, so projections read as they did before it existed.
    ``imported_through``: the seq of the latest ``thread_imported`` (unset in
    a thread never imported); file checkpoints recorded at or before it are
    never restored here. ``imported``: where it came from, for the
    transcript. ``delegated_checkpoint``: the latest session a delegated
    engine committed (unset in a thread never delegated), for
    :func:`kun.domain.delegated.resume_or_rebase`.
    """

    thread_id: str
    last_seq: int = 0
    created_at: int | None = None
    updated_at: int | None = None
    settings: ThreadSettings = ThreadSettings()
    turns: tuple[TurnState, ...] = ()
    usage: UsageTotals = UsageTotals()
    pending_approvals: tuple[str, ...] = ()
    pending_user_inputs: tuple[str, ...] = ()
    warnings: tuple[ThreadWarning, ...] = ()
    forked_from: ForkOrigin | None = None
    rewinds: tuple[Rewind, ...] = ()
    repairs: tuple[Repair, ...] = ()
    late_events: int = 0
    restoring: FilesRestoreStarted | UnsetType = UNSET
    imported_through: int | UnsetType = UNSET
    imported: Imported | UnsetType = UNSET
    delegated_checkpoint: SessionCheckpoint | UnsetType = UNSET

    @property
    def visible_turns(self) -> tuple[TurnState, ...]:
        return tuple(t for t in self.turns if t.hidden_by is None)

    @property
    def queued_turns(self) -> tuple[str, ...]:
        """The ids of the turns waiting to run (``turn_queued``, not yet
        started or cancelled), in the order they will start."""
        return tuple(t.turn_id for t in self.turns if t.status == "queued")

    @property
    def running_turn(self) -> TurnState | None:
        """The open turn that has started (queued turns wait after it)."""
        return next((t for t in reversed(self.turns) if t.status == "running"), None)

    @property
    def status(self) -> str:
        """``running`` while a turn is open, else the last visible turn's status
        (``idle`` for a thread with no turn, and for a fork whose last turn is
        the one its fork point cut: nothing has run in the fork yet, and it
        is ready for a turn). A queued turn cancelled before it ran does not
        count: it never happened."""
        for turn in reversed(self.turns):
            if not turn.settled:
                return "running"
        visible = [t for t in self.visible_turns if t.abort_reason != QUEUE_CANCELLED]
        if not visible or visible[-1].abort_reason == "forked":
            return "idle"
        return visible[-1].status
