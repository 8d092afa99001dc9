"""Items: the smallest persisted units of a turn.

Items are state; events are how state changes. A completed item is never
rewritten in place: a change is a new event carrying the whole new item.
"""

from __future__ import annotations

from typing import Literal

import msgspec

ItemStatus = Literal[
    "in_progress",
    "completed",
    "failed",
    "aborted",
    "pending",
    "approved",
    "denied",
    "answered",
    "expired",
    "cancelled",
    "unknown_after_crash",
]
"""Every status an item can have. ``in_progress`` and ``pending`` are open;
the rest are final. Approvals go pending -> approved/denied/expired/cancelled,
user inputs pending -> answered/cancelled, everything else in_progress ->
completed/failed/aborted. ``unknown_after_crash`` is a tool call that started
but whose end was never recorded."""

OPEN_STATUSES: frozenset[str] = frozenset({"in_progress", "pending"})

Severity = Literal["info", "warning", "error", "fatal"]


class ItemBase(
    msgspec.Struct,
    frozen=True,
    kw_only=True,
    gc=False,
    omit_defaults=True,
    tag_field="type",
):
    id: str
    status: ItemStatus = "completed"


class BlobRef(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """Content kept once in a side file beside the log, named by its SHA-256
    (lowercase hex) and checked against it and ``size`` (bytes) when read:
    a line stays small however big the content, and identical content is
    stored once."""

    sha256: str
    size: int


class FileCheckpoint(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One change kun made to a workspace file, kept so a rewind can undo it
    (:mod:`kun.domain.checkpoints`): ``path`` relative to the workspace
    root; ``before`` the side file holding what the file held before the
    change (``None``: it did not exist), stored before the change was made;
    ``after_sha256`` the SHA-256 of what the change left (``None``: the file
    was removed). A rewind restores ``before`` only where the file still
    hashes to ``after_sha256``, so nobody else's change is overwritten."""

    path: str
    before: BlobRef | None = None
    after_sha256: str | None = None


class Attachment(msgspec.Struct, frozen=True, kw_only=True, gc=False, omit_defaults=True):
    """A file sent to the model with a message or a tool result. ``ref``
    names the side file holding its bytes as they were when it was recorded
    (what every later request sends, wherever the thread has moved);
    ``path`` is where it came from, for people. An attachment recorded
    before side files held attachments has no ``ref`` and is read from
    ``path`` when a request is built. Fields at their defaults are left out
    of a line, as an item's are."""

    name: str
    mime_type: str
    path: str | None = None
    size_bytes: int | None = None
    ref: BlobRef | None = None


class UserMessage(ItemBase, tag="user_message", frozen=True, kw_only=True):
    """``goal_resume``: kun started this turn on its own to continue the
    thread's goal (SPEC §7.4), and this is resume attempt number
    ``goal_resume``; 0 for a message a person sent."""

    text: str
    attachments: tuple[Attachment, ...] = ()
    steered: bool = False
    goal_resume: int = 0


class AssistantText(ItemBase, tag="assistant_text", frozen=True, kw_only=True):
    """``thought_signature``: Gemini's opaque signature on the text part of
    this step (the last one given), sent back verbatim on that part."""

    text: str = ""
    thought_signature: str | None = None


class AssistantReasoning(ItemBase, tag="assistant_reasoning", frozen=True, kw_only=True):
    """``signature`` authenticates Anthropic thinking; ``thought_signature``
    is Gemini's, from its thought part. Two fields, so a signature only ever
    goes back to the provider family that made it."""

    text: str = ""
    signature: str | None = None
    thought_signature: str | None = None


class ToolCall(ItemBase, tag="tool_call", frozen=True, kw_only=True):
    """A call the model asked for. ``arguments`` is the JSON object verbatim
    (kept as raw JSON so the snapshot stays immutable and round-trips
    byte-exactly; ``{}`` while nothing is known yet); ``arguments_text`` holds
    the fragments while they stream."""

    call_id: str
    name: str = ""
    arguments: msgspec.Raw
    arguments_text: str = ""
    side_thread: str | None = None
    """A ``delegate_task`` call's side thread, once it is created
    (``subagent_started``); its turn does the work, its answer is the result."""
    agent: str | None = None
    thought_signature: str | None = None
    """Gemini's opaque signature on this call's ``functionCall`` part (Gemini
    3 refuses a history whose first call of a step lost it); sent back
    verbatim on that part, never to another provider."""


class ToolResult(ItemBase, tag="tool_result", frozen=True, kw_only=True):
    """A call's output. ``attachments`` are files the tool produced for the
    model to see (a screenshot, an image it read), sent as images to models
    that take them. ``diff`` is what a file tool changed, as a capped unified
    diff: for people (the live view, replay), never sent to the model.

    An output too big for a log line lives in a side file: ``output_ref``
    names it, ``output`` holds only its head (for people), and the request
    projection sends the side file's whole content instead."""

    call_id: str
    name: str = ""
    output: str = ""
    is_error: bool = False
    code: str | None = None
    attachments: tuple[Attachment, ...] = ()
    diff: str = ""
    output_ref: BlobRef | None = None
    checkpoint: FileCheckpoint | None = None


class Approval(ItemBase, tag="approval", frozen=True, kw_only=True):
    """A request to run a tool call; ``diff`` is what a file write would change."""

    call_id: str | None = None
    tool_name: str = ""
    summary: str = ""
    reason: str | None = None
    diff: str = ""
    side_thread: str | None = None
    """Set on the copy a parent turn shows of its sub-agent's approval
    (:mod:`kun.runtime.delegation`): answering it answers the side thread's."""


class UserInput(ItemBase, tag="user_input", frozen=True, kw_only=True):
    question: str
    options: tuple[str, ...] = ()
    answer: str | None = None
    side_thread: str | None = None
    """As :attr:`Approval.side_thread`: a sub-agent's question, shown here."""


class Plan(ItemBase, tag="plan", frozen=True, kw_only=True):
    """A plan (SPEC §7.5): ``markdown`` the plan itself, ``summary`` one
    line about it, ``workspace`` the workspace it was written for (a plan
    for another workspace is stale, :mod:`kun.domain.plan_mode`).
    ``from_reply``: the model answered in prose instead of calling
    ``create_plan``, and kun recorded the prose as the plan through its own
    call; the summary is then a title taken from the prose."""

    markdown: str
    summary: str = ""
    workspace: str = ""
    from_reply: bool = False


class Compaction(ItemBase, tag="compaction", frozen=True, kw_only=True):
    """A summary standing for the history up to and including the item
    ``covers_until`` names (see :mod:`kun.domain.compaction`); without it
    (older logs) the summary is only a user entry where it stands."""

    summary: str
    replaced_items: int = 0
    covers_until: str | None = None


class WarningItem(ItemBase, tag="warning", frozen=True, kw_only=True):
    code: str
    message: str


class ErrorItem(ItemBase, tag="error", frozen=True, kw_only=True):
    code: str
    message: str
    severity: Severity = "error"


Item = (
    UserMessage
    | AssistantText
    | AssistantReasoning
    | ToolCall
    | ToolResult
    | Approval
    | UserInput
    | Plan
    | Compaction
    | WarningItem
    | ErrorItem
)
