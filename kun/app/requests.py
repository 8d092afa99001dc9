"""The request bodies of kun's application interface (:mod:`kun.app.interface`)
as msgspec Structs: what :class:`~kun.app.interface.Kun` methods take, what
``kun serve`` decodes its JSON bodies into (:mod:`kun.server.bodies`), and
what :mod:`kun.server.openapi` publishes, so the one description serves the
in-process adapter, the HTTP routes and the Python client alike.

Each Struct forbids unknown fields (a misspelt field is an error, not
silently ignored). A name (a title, a model, a file name) is one line of
printable text: a control character (a newline or a tab too) would corrupt
a listing, a log line or the terminal that shows it. A count is at most
2^63 - 1, what every store and client can hold.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from kun.contracts.threads import AllowRule, ApprovalPolicy

__all__ = [
    "MAX_BODY_BYTES",
    "AnswerApproval",
    "AnswerUserInput",
    "ChangeGoal",
    "Collect",
    "CreateThread",
    "Fork",
    "Interrupt",
    "Limits",
    "Multitask",
    "NoBody",
    "ReplayThread",
    "RestoreThread",
    "RewindThread",
    "SetGoal",
    "StartTurn",
    "Steer",
    "UpdateThread",
    "Upload",
]

MAX_BODY_BYTES = 32 * 1024 * 1024

_Text = Annotated[str, msgspec.Meta(max_length=1 << 20)]
_ONE_LINE = r"^[^\x00-\x1f\x7f-\x9f\u2028\u2029]*(?![\s\S])"
_Name = Annotated[
    str,
    msgspec.Meta(
        min_length=1,
        max_length=200,
        pattern=_ONE_LINE,
        description="one line of text, without control characters",
    ),
]
_REGEX_SAID = f"`str` matching regex {_ONE_LINE!r}"
_ONE_LINE_SAID = "one line of text without control characters (no newline or tab)"
_Path = Annotated[
    str, msgspec.Meta(min_length=1, max_length=4096, description="a path, at most 4096 bytes")
]
_Positive = Annotated[int, msgspec.Meta(ge=1, le=(1 << 63) - 1)]
_TurnRef = _Positive | _Name
"""A turn, in every body that names one: its number as the transcript
shows it (1-based, hidden turns counted), as a JSON number or a string of
digits; or its id, or an unambiguous prefix of its id."""


class _Body(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    pass


class Limits(_Body):
    """A thread's turn limits over HTTP; ``null`` (or absent) keeps the
    server's."""

    max_steps: _Positive | None = None
    max_wall_seconds: Annotated[float, msgspec.Meta(gt=0)] | None = None
    max_cost_usd: Annotated[float, msgspec.Meta(ge=0)] | None = None
    max_turn_tokens: _Positive | None = None


class CreateThread(_Body):
    """``workspace`` is a folder on the server's machine (default: where
    the server runs); the rest as in :class:`UpdateThread`."""

    workspace: _Path | None = None
    title: _Name | None = None
    provider: _Name | None = None
    model: _Name | None = None
    approval_policy: ApprovalPolicy | None = None
    reasoning_effort: _Name | None = None
    limits: Limits | None = None


class UpdateThread(_Body):
    """Only the fields given change. ``provider``/``model``,
    ``approval_policy``, ``title`` and ``workspace`` (a folder on the
    server's machine: where the thread's turns run from now on) are recorded
    in the log (``thread_updated``); ``reasoning_effort`` and ``limits``
    apply to the turns this server starts on the thread."""

    title: _Name | None = None
    provider: _Name | None = None
    model: _Name | None = None
    approval_policy: ApprovalPolicy | None = None
    reasoning_effort: _Name | None = None
    limits: Limits | None = None
    workspace: str | None = None


class Upload(_Body):
    """An attachment sent with the turn: its bytes as base64 (never a path
    on the server)."""

    name: _Name
    mime_type: Annotated[str, msgspec.Meta(pattern=r"^[\w.+-]+/[\w.+-]+$", examples=["image/png"])]
    data: bytes


Multitask = Literal["reject", "enqueue", "steer", "interrupt"]
"""What a turn sent while the thread's turn runs does (:class:`StartTurn`)."""


class StartTurn(_Body):
    """``plan_mode``: the turn investigates and records a plan, changing
    nothing (SPEC §7.5). ``multitask``: what happens when the thread's turn
    is still running (or waiting for an answer): ``reject`` refuses (409
    ``thread_busy``); ``enqueue`` records the turn as ``queued`` and answers
    at once, to start when the turns before it have settled (409
    ``turns_queued`` past 1000 waiting); ``steer`` adds the text to the
    running turn instead (its attachments, plan mode and unattended flag
    are not used); ``interrupt`` interrupts the running turn, waits for it
    to settle, then starts this one (behind turns already queued, which
    never lose their place). With no turn running all four start the
    turn."""

    text: _Text = ""
    attachments: tuple[Upload, ...] = ()
    disable_user_input: bool = False
    plan_mode: bool = False
    multitask: Multitask = "reject"


class Steer(_Body):
    text: _Text


class Interrupt(_Body):
    """``discard``: drop what the turn generated (its user message stays);
    else open items are sealed as aborted."""

    discard: bool = False


class RewindThread(_Body):
    """Hide turn ``before_turn`` and every later one (a turn named as
    :data:`_TurnRef` says). ``files``: also put the workspace's files back
    as they were before it (where unchanged since)."""

    before_turn: _TurnRef
    files: bool = False


class Fork(_Body):
    """Keep turns 1..``at_turn`` (a turn named as :data:`_TurnRef` says),
    or the log up to ``at_seq`` (neither: all of it)."""

    at_seq: _Positive | None = None
    at_turn: _TurnRef | None = None


class AnswerApproval(_Body):
    """``always`` (with ``approved``): the allow rule to add to the thread
    first, so later calls it matches run without asking."""

    decision: Literal["approved", "denied"]
    reason: _Text | None = None
    always: AllowRule | None = None


class AnswerUserInput(_Body):
    """``answer`` ``null`` cancels the question."""

    answer: _Text | None


class NoBody(_Body):
    """A request that takes no fields (``{}`` or nothing): a field sent
    anyway is refused, as a misspelt one is everywhere else, rather than
    silently ignored."""


class SetGoal(_Body):
    """A goal for the thread, replacing any it has."""

    objective: _Text
    token_budget: _Positive | None = None


class ChangeGoal(_Body):
    """``status``: pause (``paused``), resume (``active``) or finish
    (``complete``) the goal; ``token_budget``: a new budget
    (``clear_budget``: none)."""

    status: Literal["active", "paused", "complete"] | None = None
    token_budget: _Positive | None = None
    clear_budget: bool = False


class RestoreThread(_Body):
    """``as_id``: bring the thread back under this id instead of its own."""

    as_id: _Name | None = None


class Collect(_Body):
    """``confirm``: remove the old generations an earlier gc kept."""

    confirm: bool = False


class ReplayThread(_Body):
    """``kun replay``'s flags: ``json`` (the projection, not the
    transcript), ``until_seq`` (only the events up to it), ``from_seq``
    (a page: the turns started or changed from it on; not with ``json``),
    ``strict`` (refuse events of unknown kinds and gaps), ``hidden`` (show
    the turns a rewind hid), ``reasoning`` (unfold it), ``children``
    (each sub-agent's turns under the ``delegate_task`` call that ran it)."""

    json: bool = False
    until_seq: Annotated[int, msgspec.Meta(ge=0, le=(1 << 63) - 1)] | None = None
    from_seq: _Positive | None = None
    strict: bool = False
    hidden: bool = False
    reasoning: bool = False
    children: bool = False
