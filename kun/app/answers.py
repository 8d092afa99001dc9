"""The answers of kun's application interface (:mod:`kun.app.interface`)
as msgspec Structs: both adapters return these, ``kun serve``'s handlers
encode them, and :mod:`kun.server.openapi` publishes their schemas, so a
documented answer is the answer sent. The projections a route hands out
as they are (a thread, a turn, a thread list row, usage totals) are the
domain's own Structs.

A field with a default is left out of the answer when it holds it
(``omit_defaults``): ``files`` and ``files_note`` appear only when a
rewind put files back, ``reason`` only when a compaction had nothing to
do. A field that is always there has no default.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from kun.app.listing import ThreadSummary
from kun.contracts.events import FilesRestore
from kun.contracts.threads import Goal, ThreadSettings
from kun.contracts.usage import UsageTotals
from kun.domain.state import TurnState

__all__ = [
    "ApprovalAnswered",
    "Collected",
    "CompactionStarted",
    "Exported",
    "Forked",
    "GoalResume",
    "GoalSet",
    "ImportDone",
    "Providers",
    "Reconciled",
    "ReplayNote",
    "Restored",
    "RewindDone",
    "RewindUndone",
    "Steered",
    "ThreadOptions",
    "ThreadPage",
    "ThreadUsage",
    "TrashEntry",
    "TrashPage",
    "Trashed",
    "TurnLimitsShown",
    "TurnStarted",
    "UsageReport",
    "UserInputAnswered",
    "WaitingTurn",
]


class _Answer(msgspec.Struct, kw_only=True, omit_defaults=True):
    pass


class TurnLimitsShown(_Answer):
    """The limits the thread's turns run with here (``null``: none)."""

    max_steps: int | None
    max_wall_seconds: float | None
    max_cost_usd: float | None
    max_turn_tokens: int | None


class ThreadOptions(_Answer):
    """A thread created or changed: its logged settings and what its turns
    get from this server."""

    thread_id: str
    settings: ThreadSettings
    reasoning_effort: str | None
    limits: TurnLimitsShown


class ThreadPage(_Answer):
    """``next_cursor``: give it as ``cursor`` for the next page; ``null``
    on the last one. ``home``: the folder the threads are under (on the
    machine that holds them), for a surface to say where it looked."""

    threads: list[ThreadSummary]
    next_cursor: str | None
    home: str | None = None


class TurnStarted(_Answer):
    """``status``: ``running``, or ``queued`` for a turn that waits for
    the thread's running turn (``multitask`` ``enqueue``). ``steered``: the
    text went to the running turn ``turn_id`` (``multitask`` ``steer``);
    no turn was started."""

    thread_id: str
    turn_id: str
    status: Literal["running", "queued"]
    steered: bool = False


class Steered(_Answer):
    thread_id: str
    turn_id: str
    queued: bool


class RewindDone(_Answer):
    """``turn_number``/``turn_id``: the first turn hidden; ``hidden``: how
    many turns the rewind hid; ``seq``: the rewind's, for an undo."""

    thread_id: str
    seq: int
    turn_id: str
    turn_number: int
    hidden: int
    files: FilesRestore | None = None
    files_note: str | None = None


class RewindUndone(_Answer):
    """``restored``: how many turns came back."""

    thread_id: str
    rewind_seq: int
    restored: int
    files: FilesRestore | None = None
    files_note: str | None = None


class Forked(_Answer):
    """``thread_id``: the new thread; ``source_seq``: where it was cut;
    ``cut``: the line saying which turn that point cut through (absent
    when it fell between turns)."""

    thread_id: str
    source_thread_id: str
    source_seq: int
    cut: str | None = None


class CompactionStarted(_Answer):
    """``turn_id`` ``null``: nothing to summarise yet, and ``reason`` says so."""

    thread_id: str
    turn_id: str | None
    reason: str | None = None


class ApprovalAnswered(_Answer):
    approval_id: str
    decision: Literal["approved", "denied"]


class UserInputAnswered(_Answer):
    request_id: str
    status: Literal["answered", "cancelled"]


class ThreadUsage(_Answer):
    """``cost_usd`` ``null``: no call of the thread had a price; ``notes``:
    what reading the log skipped, as ``kun usage`` says it (absent: nothing).
    ``usage`` includes the thread's sub-agents' (their side threads');
    ``subagents`` is that part (absent: it ran none)."""

    thread_id: str
    usage: UsageTotals
    cost_usd: float | None
    skipped_lines: int
    notes: tuple[str, ...] = ()
    subagents: UsageTotals | None = None


class UsageReport(_Answer):
    """``text``: the table ``kun usage`` prints."""

    threads: list[ThreadUsage]
    text: str


class ImportDone(_Answer):
    """``events``: how many the thread's log holds; ``detail``: what else to
    say (the turns run in kun since an unchanged import); ``trashed``: where
    a replaced thread went, relative to the home."""

    thread_id: str
    outcome: Literal["imported", "already_imported", "replaced"]
    events: int
    detail: str
    trashed: str | None
    suggests: list[list[str]] = []
    """The arguments of each ``kun`` command ``detail`` names, for a
    surface to write out as its user would paste it."""


class Exported(_Answer):
    """A bundle written: its thread, how many events and side files it holds."""

    thread_id: str
    events: int
    side_files: int


class GoalSet(_Answer):
    """The thread's goal after a change (``null``: it has none)."""

    thread_id: str
    goal: Goal | None


class Trashed(_Answer):
    """A thread moved to the trash: ``entry`` names it there (give it to
    ``restore``)."""

    thread_id: str
    entry: str


class TrashEntry(_Answer):
    """A thread in the trash; ``removed_at`` in milliseconds since the epoch."""

    entry: str
    thread_id: str
    removed_at: int


class TrashPage(_Answer):
    entries: list[TrashEntry]


class Restored(_Answer):
    """A trashed thread back among the threads, under ``thread_id``."""

    thread_id: str
    entry: str


class Collected(_Answer):
    """What a gc did: ``generation`` ``null`` when there was nothing to
    collect; ``freed``: bytes removed by a confirm (old generations)."""

    thread_id: str
    generation: str | None
    turns: int = 0
    events: int = 0
    side_files: int = 0
    bytes_saved: int = 0
    freed: int = 0


class Providers(_Answer):
    """The providers turns can run on here (``kun.toml``'s, in its order),
    for ``/model`` to list."""

    providers: list[str]


class Reconciled(_Answer):
    """Turns left running by a process that died, settled: the threads
    touched, and those skipped with why."""

    reconciled: list[str]
    skipped: dict[str, str]


class ReplayNote(_Answer):
    """A note of a replay, for stderr: what the read skipped or found
    missing (:meth:`kun.app.interface.Kun.replay`)."""

    text: str


class GoalResume(_Answer):
    """What settling turn ``after_turn`` did for the thread's goal:
    ``state`` ``none`` (no resume: the goal is not active, or resuming is
    suppressed), ``waiting`` (on its timer: ``delay_seconds``, attempt
    ``attempt`` of ``max_attempts``), ``started`` (turn ``turn_id``) or
    ``dropped`` (cancelled, or the turn could not start)."""

    thread_id: str
    after_turn: str
    state: Literal["none", "waiting", "started", "dropped"]
    delay_seconds: float | None = None
    attempt: int | None = None
    max_attempts: int | None = None
    turn_id: str | None = None


class WaitingTurn(TurnState, frozen=True, kw_only=True, gc=False):
    """A queued turn that no live worker sharing the store can run, and
    why (``waiting_for``): not from the log, so not in
    :class:`~kun.domain.state.TurnState` (whose JSON is the projection's)."""

    waiting_for: str
