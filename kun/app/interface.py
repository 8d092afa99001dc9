"""The one application interface every surface speaks: :class:`Kun`.

The CLI, the interactive session, ``kun serve``'s routes and the Python
client all work on threads through this protocol, never around it. Two
adapters implement it: the in-process one (the runtime and the store of a
home on this machine, :mod:`kun.app.local`) and the HTTP one (a running
``kun serve``, :class:`kun.client.AsyncKunClient`). Which one a command
gets is decided once, at the composition root (``--server URL``,
``$KUN_SERVER``), so a surface is written once and prints the same bytes
whichever adapter runs.

Arguments and results are the contract types (:mod:`kun.contracts`), the
thread and turn projections, the request Structs of :mod:`kun.app.requests`
and the answer Structs of :mod:`kun.app.answers` — never dicts. A thread is
named by its id or an unambiguous prefix of it; both adapters resolve it.

Errors are kun's own (:class:`kun.errors.KunError`): a user mistake or a
refusal is a :class:`~kun.errors.UserMistake`, and one that crossed the
wire is a :class:`kun.app.refusals.Refused` carrying the API's ``status``,
``code`` and ``field``, with the same message as the local error.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Literal, Protocol

from kun.app.answers import (
    ApprovalAnswered,
    Collected,
    CompactionStarted,
    Exported,
    Forked,
    GoalResume,
    GoalSet,
    ImportDone,
    Providers,
    Reconciled,
    ReplayNote,
    Restored,
    RewindDone,
    RewindUndone,
    Steered,
    ThreadOptions,
    ThreadPage,
    Trashed,
    TrashPage,
    TurnStarted,
    UsageReport,
    UserInputAnswered,
)
from kun.app.requests import CreateThread, ReplayThread, StartTurn, UpdateThread
from kun.contracts.events import Event
from kun.contracts.threads import AllowRule, GoalStatus
from kun.domain.state import ThreadState, TurnState

__all__ = ["EventFeed", "Kun", "ThreadState", "TurnState"]

ImportSource = Literal["kun", "codex", "claude-code"]


class EventFeed(Protocol):
    """A thread's events from a seq on: durable events in seq order, each
    once, and with ``previews`` the streamed text not yet in the log as
    events with ``seq`` 0 (:class:`kun.runtime.bus.LiveText` tells a
    preview's characters from the durable delta that repeats them).

    Entering the feed subscribes: every event appended after that is in it,
    so a caller opens the feed before it starts a turn and misses nothing.
    The HTTP adapter resumes a dropped connection from the last seq seen on
    its own."""

    def __aiter__(self) -> AsyncIterator[Event]: ...


class Kun(Protocol):
    """kun's threads, wherever they are held."""

    # -- threads ----------------------------------------------------------
    async def create_thread(self, request: CreateThread) -> ThreadOptions:
        """A new thread with these settings (unset: the configured defaults)."""
        ...

    async def update_thread(self, thread: str, request: UpdateThread) -> ThreadOptions:
        """Change the thread's settings (its title, model, approval policy,
        limits, workspace)."""
        ...

    async def threads(
        self,
        *,
        limit: int | None = None,
        cursor: str | None = None,
        include_hidden: bool = False,
    ) -> ThreadPage:
        """A page of the threads, newest activity first."""
        ...

    async def thread(self, thread: str) -> ThreadState:
        """The thread's projection, as its log has it now."""
        ...

    async def resolve_thread(self, thread: str) -> str:
        """The full id of the thread ``thread`` names (an id or an
        unambiguous prefix of one), without reading its log."""
        ...

    # -- turns --------------------------------------------------------------
    async def start_turn(self, thread: str, request: StartTurn) -> TurnStarted:
        """Start a turn; it runs in the background (follow it with
        :meth:`follow`, or wait with :meth:`wait_turn`)."""
        ...

    async def turn(self, thread: str, turn_id: str) -> TurnState: ...

    async def wait_turn(self, thread: str, turn_id: str) -> TurnState:
        """The turn once it has settled (completed, failed or aborted)."""
        ...

    async def steer(self, thread: str, turn_id: str, text: str) -> Steered: ...

    async def interrupt(self, thread: str, turn_id: str, *, discard: bool = False) -> TurnState:
        """Interrupt the running turn; the turn as the log then has it."""
        ...

    async def answer_approval(
        self,
        approval_id: str,
        decision: Literal["approved", "denied"],
        reason: str | None = None,
        *,
        always: AllowRule | None = None,
    ) -> ApprovalAnswered:
        """``always`` (with ``approved``): add the rule to the thread's allow
        rules first, so later calls it matches run without asking."""
        ...

    async def answer_user_input(self, request_id: str, answer: str | None) -> UserInputAnswered:
        """``None`` cancels the question."""
        ...

    def follow(
        self, thread: str, *, after: int = 0, previews: bool = False
    ) -> AbstractAsyncContextManager[EventFeed]:
        """The thread's events after seq ``after``, then live, until the
        caller leaves (:class:`EventFeed`)."""
        ...

    # -- reshaping ----------------------------------------------------------
    async def rewind(self, thread: str, before_turn: str, *, files: bool = False) -> RewindDone:
        """Hide ``before_turn`` (its number as the transcript shows it, or
        its id) and every later turn; ``files``: put the files back too."""
        ...

    async def undo_rewind(self, thread: str) -> RewindUndone: ...

    async def fork(
        self, thread: str, *, at_seq: int | None = None, at_turn: str | None = None
    ) -> Forked: ...

    async def compact(self, thread: str) -> CompactionStarted:
        """Start compacting the history (a turn; ``turn_id`` ``None``: there
        is nothing to summarise yet, and ``reason`` says so)."""
        ...

    # -- reads --------------------------------------------------------------
    async def usage(self, *threads: str) -> UsageReport:
        """One thread's usage, or two side by side (``text``: the table)."""
        ...

    async def transcript(
        self,
        thread: str,
        *,
        hidden: bool = False,
        reasoning: bool = False,
        until_seq: int | None = None,
    ) -> str:
        """``kun replay``'s text of the thread (up to ``until_seq``)."""
        ...

    def replay(
        self, thread: str, request: ReplayThread
    ) -> AsyncGenerator[bytes | ReplayNote, None]:
        """``kun replay``'s output as the log is folded: the bytes for
        stdout a chunk at a time (the first turn as soon as it is known),
        then a :class:`ReplayNote` for each note for stderr. Close it
        (``aclosing``) when leaving early."""
        ...

    async def log(self, thread: str) -> bytes:
        """The thread's ``events.jsonl``, as stored."""
        ...

    # -- moving threads -----------------------------------------------------
    async def export_thread(
        self, thread: str, out: Path, *, compress: bool = True, force: bool = False
    ) -> Exported:
        """Write the thread's bundle to ``out`` (it appears only once whole);
        an ``out`` that exists is refused unless ``force``."""
        ...

    async def import_thread(
        self,
        path: Path,
        *,
        source: ImportSource = "kun",
        as_id: str | None = None,
        replace: bool = False,
        workspace: Path | None = None,
    ) -> ImportDone:
        """Import a bundle, or a ``codex`` or ``claude-code`` session file;
        ``workspace``: where the thread's new turns run (a folder where the
        threads are held)."""
        ...

    # -- goals --------------------------------------------------------------
    async def set_goal(
        self, thread: str, objective: str, *, token_budget: int | None = None
    ) -> GoalSet:
        """Give the thread a goal (replacing any); kun resumes turns toward
        it until it is complete, blocked or paused."""
        ...

    async def change_goal(
        self,
        thread: str,
        *,
        status: GoalStatus | None = None,
        token_budget: int | None = None,
        clear_budget: bool = False,
        clear: bool = False,
    ) -> GoalSet:
        """Pause, resume or complete the goal, change its budget, or
        (``clear``) drop it."""
        ...

    async def goal_resume(self, thread: str, after_turn: str) -> GoalResume:
        """Whether settling ``after_turn`` scheduled a resume of the goal,
        and where it stands (waiting on its timer, started, or dropped):
        what ``kun run --goal`` waits on between turns."""
        ...

    # -- clean-up -----------------------------------------------------------
    async def trash_thread(self, thread: str) -> Trashed:
        """Move the thread to the trash (``kun rm``)."""
        ...

    async def trash(self) -> TrashPage:
        """What the trash holds, newest first."""
        ...

    async def restore_thread(self, entry: str, *, as_id: str | None = None) -> Restored:
        """Bring a trashed thread back (``as_id``: under another id)."""
        ...

    async def collect(self, thread: str, *, confirm: bool = False) -> Collected:
        """``kun gc``: a new generation of the log without what rewinds hid
        (``confirm``: remove the old generations an earlier gc kept)."""
        ...

    async def reconcile(self) -> Reconciled:
        """Settle turns left running by a process that died."""
        ...

    async def providers(self) -> Providers:
        """The providers configured where turns run."""
        ...
