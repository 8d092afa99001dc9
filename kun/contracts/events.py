"""The event contract: every state change of a thread, as one tagged union.

Each event is one line of ``events.jsonl``. The envelope (``seq``, ``at``,
``thread_id``, ``turn_id``, ``v``) is shared; ``kind`` is the tag. Events are
acyclic, so they are declared ``gc=False``: a million of them must not make the
garbage collector crawl.

Fields at their defaults are left out of a line (``omit_defaults``): most of
an envelope is ``"turn_id":null`` and ``"v":1`` otherwise, on lines that often
carry four characters of text. The decoder fills them back in, so a line with
them and a line without decode to the same event. ``thread_id`` defaults to
``""`` only so a line may leave it out: the store writes lines without it (the
file already names the thread) and its reader fills it in; events in memory
and on the bus always carry it.

Delta contract: the ``text`` of a delta event is a fragment to append; the item
carried by ``item_created``/``item_updated``/``item_completed`` is the whole
authoritative item and replaces what the deltas built.
"""

from __future__ import annotations

import hashlib
from typing import Annotated, Literal, get_args

import msgspec
from msgspec import UNSET, UnsetType

from kun.contracts.context import TurnContext
from kun.contracts.items import (
    AssistantReasoning,
    AssistantText,
    FileCheckpoint,
    Item,
    Severity,
    ToolCall,
    UserMessage,
)
from kun.contracts.threads import (
    AllowRule,
    ApprovalPolicy,
    Goal,
    ThreadSettings,
    TitleSource,
    Todo,
)
from kun.contracts.usage import UsageSnapshot

PipelineStageName = Literal[
    "setup",
    "pre_start",
    "post_start",
    "input_received",
    "input_cached",
    "input_routed",
    "input_compressed",
    "input_remembered",
    "pre_send",
    "post_send",
    "response_received",
]


MAX_SEQ = (1 << 63) - 1
"""The largest seq: a signed 64-bit count, like every count the API takes."""
MAX_AT = 253_402_300_799_999
"""The last millisecond of the year 9999: the latest ``at`` a date can show."""

Seq = Annotated[int, msgspec.Meta(ge=0, le=MAX_SEQ)]
"""0 is an event not numbered: a draft, or a live preview on the stream; in a
log, the readers check that each seq follows the previous line's, from 1."""
EpochMs = Annotated[int, msgspec.Meta(ge=0, le=MAX_AT)]


class EventBase(
    msgspec.Struct, frozen=True, kw_only=True, gc=False, tag_field="kind", omit_defaults=True
):
    """The envelope. ``seq`` starts at 1 per thread and strictly increases; it
    and ``at`` (epoch milliseconds) are assigned by the thread's writer. A
    line whose seq or at is out of range (a seq past 2^63 - 1, or negative)
    does not decode: it is corrupt, never a count to carry on from. The
    bounds hold on decode, not in memory."""

    seq: Seq
    at: EpochMs
    thread_id: str = ""
    turn_id: str | None = None
    v: int = 1


# -- thread ------------------------------------------------------------------


class ThreadCreated(EventBase, tag="thread_created", frozen=True, kw_only=True):
    settings: ThreadSettings = ThreadSettings()


class ThreadUpdated(EventBase, tag="thread_updated", frozen=True, kw_only=True):
    """Changes the named settings; an absent field is left as it was."""

    workspace: str | UnsetType = UNSET
    provider: str | UnsetType | None = UNSET
    model: str | UnsetType | None = UNSET
    approval_policy: ApprovalPolicy | UnsetType = UNSET
    title: str | UnsetType = UNSET
    title_auto: bool | UnsetType = UNSET
    title_source: TitleSource | UnsetType = UNSET
    goal: Goal | UnsetType | None = UNSET
    todos: tuple[Todo, ...] | UnsetType = UNSET
    hidden: bool | UnsetType = UNSET
    always_allow: tuple[AllowRule, ...] | UnsetType = UNSET


class ThreadForked(EventBase, tag="thread_forked", frozen=True, kw_only=True):
    """Lineage of a fork. A forked log starts with a copy of the source's
    events up to ``source_seq``; this event follows them. Turns still open at
    that point are settled as aborted: their work stays with the source.
    ``source_at`` is the ``at`` of the event at ``source_seq``, the fork
    point's own time: a cut turn ends then, not when the fork was made (which
    may be days later). ``None`` in forks written before it: their cut turns
    end at this event's ``at``, as they always replayed."""

    source_thread_id: str
    source_seq: int
    source_at: int | None = None


class FileSkipped(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """A file a restore left alone, and why (changed or deleted since kun
    wrote it, its saved content unreadable)."""

    path: str
    reason: str


class FilesRestore(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """What a rewind (or its undo) did to the workspace's files. Each of
    ``restored`` is the restore's own change as a checkpoint: ``before`` the
    side file with what the file held just before the restore, so undoing
    it can put that back."""

    restored: tuple[FileCheckpoint, ...] = ()
    skipped: tuple[FileSkipped, ...] = ()


class ThreadRewound(EventBase, tag="thread_rewound", frozen=True, kw_only=True):
    """Hides the turn ``before_turn_id`` and every later turn. Nothing is
    deleted; ``thread_rewind_undone`` brings them back. ``files`` is set when
    the rewind also put the workspace's files back (``kun rewind --files``)."""

    before_turn_id: str
    files: FilesRestore | None = None


class ThreadRewindUndone(EventBase, tag="thread_rewind_undone", frozen=True, kw_only=True):
    """``files``: what undoing a rewind that restored files put back."""

    rewind_seq: int
    files: FilesRestore | None = None


class FilesRestoreStarted(EventBase, tag="files_restore_started", frozen=True, kw_only=True):
    """Written (durably) before a rewind, or its undo, changes any file: the
    intent. ``planned`` are the changes it is about to make, as checkpoints
    (``before``: the side file, already saved, of what the file holds now;
    ``after_sha256``: what it will hold, ``None``: removed); ``skipped``
    the files the plan leaves alone. The ``thread_rewound``
    (``before_turn_id``) or ``thread_rewind_undone`` (``rewind_seq``) that
    follows is the outcome. One left without an outcome (kun was killed in
    between) is settled on the next open by hashing each planned file: what
    holds ``after_sha256`` was restored, anything else was not and is left
    as it is."""

    before_turn_id: str | None = None
    rewind_seq: int | None = None
    planned: tuple[FileCheckpoint, ...] = ()
    skipped: tuple[FileSkipped, ...] = ()


# -- turn --------------------------------------------------------------------


class TurnStarted(EventBase, tag="turn_started", frozen=True, kw_only=True):
    """``context``: what every request of the turn sent besides the history
    (system prompt, project instructions, environment); absent in logs
    written before it was recorded, and for turns run without it."""

    provider: str | None = None
    model: str | None = None
    disable_user_input: bool = False
    plan_mode: bool = False
    context: TurnContext | UnsetType = UNSET


class TurnQueued(EventBase, tag="turn_queued", frozen=True, kw_only=True):
    """A turn that waits for the thread's running turn (``multitask``
    ``enqueue``). It carries what its ``turn_started`` will say and its
    user ``message`` (attachments already kept as side files), so the
    writer can start it later, in this process or after a restart,
    unchanged: when it starts, ``turn_started`` with the same ``turn_id``
    follows (with the ``context`` read then) and nothing repeats the
    message. ``reasoning_effort``: the effort the turn was asked with
    (``None``: the runtime's). A queued turn is cancelled by
    ``turn_aborted`` with reason ``cancelled``: it settles without ever
    running."""

    message: UserMessage
    provider: str | None = None
    model: str | None = None
    disable_user_input: bool = False
    plan_mode: bool = False
    reasoning_effort: str | None = None


class TurnSteered(EventBase, tag="turn_steered", frozen=True, kw_only=True):
    text: str


class PipelineStage(EventBase, tag="pipeline_stage", frozen=True, kw_only=True):
    stage: PipelineStageName
    step: int = 0


class TurnCompleted(EventBase, tag="turn_completed", frozen=True, kw_only=True):
    stop_reason: str | None = None


class TurnFailed(EventBase, tag="turn_failed", frozen=True, kw_only=True):
    code: str
    message: str
    severity: Severity = "error"


class TurnAborted(EventBase, tag="turn_aborted", frozen=True, kw_only=True):
    """``discard`` drops the turn's generated items (the user's messages
    stay); otherwise open items are sealed as aborted."""

    reason: str = "interrupted"
    discard: bool = False


# -- items -------------------------------------------------------------------


class ItemCreated(EventBase, tag="item_created", frozen=True, kw_only=True):
    item: Item


class ItemUpdated(EventBase, tag="item_updated", frozen=True, kw_only=True):
    item: Item


class DeltaDigest(msgspec.Struct, frozen=True, gc=False):
    """What a streamed text is without repeating it: its length in code
    points and the BLAKE2b-64 of its UTF-8, in hex (:func:`digest_text`)."""

    chars: int
    blake2b: str


def digest_text(text: str) -> DeltaDigest:
    return DeltaDigest(len(text), hashlib.blake2b(text.encode(), digest_size=8).hexdigest())


def streamed_field(item: Item) -> str | None:
    """The field of ``item`` that its deltas build: ``text`` of an assistant
    text or reasoning, ``arguments_text`` of a tool call; ``None`` for the
    items nothing streams into."""
    kind = type(item)
    if kind is AssistantText or kind is AssistantReasoning:
        return "text"
    return "arguments_text" if kind is ToolCall else None


class ItemCompleted(EventBase, tag="item_completed", frozen=True, kw_only=True):
    """``text_from_deltas``: the item's streamed field (:func:`streamed_field`:
    an assistant text's or reasoning's ``text``, a tool call's
    ``arguments_text``) is exactly what its deltas built, so the line carries
    it as ``""`` and this digest instead of the text once more; the fold takes
    the text from the deltas and checks it against the digest.
    ``arguments_from_text`` (with ``text_from_deltas``, on a tool call): the
    call's raw ``arguments`` are exactly the UTF-8 of that text, so the line
    carries them as ``{}``; the fold puts the text's bytes back. A file a
    model writes streams as arguments, and would otherwise be logged twice."""

    item: Item
    text_from_deltas: DeltaDigest | None = None
    arguments_from_text: bool = False


class AssistantTextDelta(EventBase, tag="assistant_text_delta", frozen=True, kw_only=True):
    item_id: str
    text: str


class AssistantReasoningDelta(
    EventBase, tag="assistant_reasoning_delta", frozen=True, kw_only=True
):
    item_id: str
    text: str


class ToolCallDelta(EventBase, tag="tool_call_delta", frozen=True, kw_only=True):
    """Fragments of a streamed tool call: ``name`` and ``arguments`` append.

    ``call_id`` may be ``""`` on a fragment of a call whose earlier fragment
    named it: the item already holds it, and a later one need not repeat it
    (a call streaming a file's content writes a line a second)."""

    item_id: str
    call_id: str = ""
    name: str = ""
    arguments: str = ""


class ToolCallStarted(EventBase, tag="tool_call_started", frozen=True, kw_only=True):
    """The tool began executing: from here its side effects may exist."""

    item_id: str
    call_id: str
    name: str


class ToolCallFinished(EventBase, tag="tool_call_finished", frozen=True, kw_only=True):
    item_id: str
    call_id: str
    status: Literal["completed", "failed", "aborted"] = "completed"
    duration_ms: int = 0


class ToolStormSuppressed(EventBase, tag="tool_storm_suppressed", frozen=True, kw_only=True):
    call_id: str
    name: str
    repeats: int


# -- suspension points -------------------------------------------------------


class ApprovalRequested(EventBase, tag="approval_requested", frozen=True, kw_only=True):
    """Creates a pending ``approval`` item whose id is ``approval_id``.
    ``diff`` is what a file write would change, as a (capped) unified diff
    computed when the approval was asked, so a replay shows what the user
    saw; unset for other tools (so their lines are written as before)."""

    approval_id: str
    call_id: str | None = None
    tool_name: str = ""
    summary: str = ""
    diff: str | UnsetType = UNSET
    side_thread: str | UnsetType = UNSET
    """Set on a parent turn's copy of its sub-agent's approval (the side
    thread's own ``approval_requested`` holds the same id): every surface
    that shows the parent's approvals shows it, and answering the id
    answers the side thread's. ``call_id`` is then the side thread's call."""


class ApprovalResolved(EventBase, tag="approval_resolved", frozen=True, kw_only=True):
    approval_id: str
    decision: Literal["approved", "denied", "expired", "cancelled"]
    reason: str | None = None


class UserInputRequested(EventBase, tag="user_input_requested", frozen=True, kw_only=True):
    """Creates a pending ``user_input`` item whose id is ``request_id``."""

    request_id: str
    question: str
    options: tuple[str, ...] = ()
    side_thread: str | UnsetType = UNSET
    """As :attr:`ApprovalRequested.side_thread`: a sub-agent's question."""


class UserInputResolved(EventBase, tag="user_input_resolved", frozen=True, kw_only=True):
    request_id: str
    status: Literal["answered", "cancelled"]
    answer: str | None = None


# -- accounting and diagnostics ----------------------------------------------


class Usage(EventBase, tag="usage", frozen=True, kw_only=True):
    """One model call's usage; exactly one per call."""

    usage: UsageSnapshot
    provider: str | None = None
    model: str | None = None
    request_id: str | None = None
    price_source: str | None = None
    step: int = 0


class WarningEvent(EventBase, tag="warning", frozen=True, kw_only=True):
    """A warning; inside a turn it also becomes a ``warning`` item."""

    code: str
    message: str


class SubagentStarted(EventBase, tag="subagent_started", frozen=True, kw_only=True):
    """A ``delegate_task`` call (``item_id``/``call_id``, running) handed its
    task to the side thread ``side_thread``, running the agent profile
    ``agent`` (``None``: the default). Recorded before the side thread is
    created, so a crash never leaves a side thread nobody links to; the
    call's result, as for any call, says how it ended."""

    item_id: str
    call_id: str
    side_thread: str
    agent: str | None = None


class DelegatedRuntime(EventBase, tag="delegated_runtime", frozen=True, kw_only=True):
    engine: str
    mode: Literal["resumed", "rebased"]
    reason: str = ""
    session_id: str | None = None


class DelegatedCheckpoint(EventBase, tag="delegated_checkpoint", frozen=True, kw_only=True):
    """A delegated engine's session that holds this thread's history up to
    here, committed just before its turn completes. The next turn on the
    same ``engine`` and ``provider`` in the same ``workspace`` resumes
    ``session_id`` instead of replaying kun's history, provided nothing in
    the history changed since (:func:`kun.domain.delegated.resume_or_rebase`).
    Only a completed turn commits one; a commit that fails costs the next
    turn a rebase, never the turn that completed."""

    engine: str
    session_id: str
    provider: str | None = None
    workspace: str = ""


class LogRepaired(EventBase, tag="log_repaired", frozen=True, kw_only=True):
    """The writer cut a torn or undecodable tail off the log on open."""

    dropped_bytes: int
    line: int
    reason: str
    preview: str = ""


class ThreadImported(EventBase, tag="thread_imported", frozen=True, kw_only=True):
    """Appended by ``kun import`` after the events it brought in: every event
    at or before this seq was recorded somewhere else (another machine,
    another home, another agent), so the file checkpoints among them name
    files kun did not write here and a rewind never restores them.
    ``source``: ``bundle``, ``codex`` or ``claude-code``; ``workspace``:
    the directory new turns use here (``kun import --workspace``), in place
    of the one the log named; ``None`` keeps it. ``source_lines`` and
    ``source_sha256``: for a session of another agent, how many whole lines
    its file had and their SHA-256, so importing the file again tells
    "unchanged", "the other agent went on" and "rewritten" apart whatever the
    kun thread did since."""

    source: str = "bundle"
    workspace: str | None = None
    source_lines: int | None = None
    source_sha256: str | None = None


Event = (
    ThreadCreated
    | ThreadUpdated
    | ThreadForked
    | ThreadRewound
    | ThreadRewindUndone
    | FilesRestoreStarted
    | TurnStarted
    | TurnQueued
    | TurnSteered
    | PipelineStage
    | TurnCompleted
    | TurnFailed
    | TurnAborted
    | ItemCreated
    | ItemUpdated
    | ItemCompleted
    | AssistantTextDelta
    | AssistantReasoningDelta
    | ToolCallDelta
    | ToolCallStarted
    | ToolCallFinished
    | ToolStormSuppressed
    | ApprovalRequested
    | ApprovalResolved
    | UserInputRequested
    | UserInputResolved
    | SubagentStarted
    | Usage
    | WarningEvent
    | DelegatedRuntime
    | LogRepaired
    | ThreadImported
    | DelegatedCheckpoint
)

EVENT_TYPES: tuple[type[EventBase], ...] = get_args(Event)

KINDS: frozenset[str] = frozenset(t.__struct_config__.tag for t in EVENT_TYPES)  # type: ignore[misc]
