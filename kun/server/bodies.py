"""The request bodies of the API as msgspec Structs, and reading them.

Each body is decoded straight into its Struct (``forbid_unknown_fields``:
a misspelt field is an error, not silently ignored), so the types here are
the contract, and :mod:`kun.server.openapi` publishes them. A body is read
up to :data:`MAX_BODY_BYTES` (32 MiB: a few base64 images) and refused
with 413 past it, before it is decoded; a decode error names the field
(msgspec's path, ``$.limits.max_steps``) in the 400.

A body is JSON by its ``Content-Type`` (``application/json``, UTF-8 if a
charset is named), else 415 before it is read: a form or ``text/plain``
post is what a page on another site can send without asking. An empty
body may come without one. A key given twice in one object is refused
(400 ``duplicate_key``): JSON leaves it undefined and msgspec keeps the
last value, so ``{"decision": "denied", "decision": "approved"}`` would
approve. The check is one more C-speed parse of a body that already
decoded, calling back once per object.

A name (a title, a model, a file name) is one line of printable text: a
control character (a newline or a tab too) would corrupt a listing, a log
line or the terminal that shows it. A count is at most 2^63 - 1, what every
store and client can hold, so no value is silently wrapped or refused later.
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Literal, TypeVar

import msgspec
from starlette.requests import Request

from kun.contracts.threads import ApprovalPolicy
from kun.server.errors import ApiError

__all__ = [
    "MAX_BODY_BYTES",
    "AnswerApproval",
    "AnswerUserInput",
    "CreateThread",
    "Fork",
    "Interrupt",
    "Limits",
    "NoBody",
    "RewindThread",
    "StartTurn",
    "Steer",
    "UpdateThread",
    "Upload",
    "field_of",
    "is_json",
    "read_body",
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


class StartTurn(_Body):
    """``plan_mode``: the turn investigates and records a plan, changing
    nothing (SPEC §7.5)."""

    text: _Text = ""
    attachments: tuple[Upload, ...] = ()
    disable_user_input: bool = False
    plan_mode: bool = False


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
    decision: Literal["approved", "denied"]
    reason: _Text | None = None


class AnswerUserInput(_Body):
    """``answer`` ``null`` cancels the question."""

    answer: _Text | None


class NoBody(_Body):
    """A request that takes no fields (``{}`` or nothing): a field sent
    anyway is refused, as a misspelt one is everywhere else, rather than
    silently ignored."""


T = TypeVar("T", bound=_Body)

_FIELD = re.compile(r"field `([^`]*)`")
_PATH = re.compile(r"at `\$\.?([^`]*)`")


async def read_body(request: Request, kind: type[T], *, limit: int = MAX_BODY_BYTES) -> T:
    """The request's body decoded as ``kind``; an empty body is ``{}``."""
    declared = request.headers.get("content-type")
    if declared is not None and not is_json(declared):
        raise _not_json(declared)
    raw = await _read(request, limit)
    if raw and declared is None:
        raise _not_json(None)
    try:
        body = msgspec.json.decode(raw or b"{}", type=kind)
    except msgspec.ValidationError as exc:
        message = str(exc).replace(_REGEX_SAID, _ONE_LINE_SAID)
        raise ApiError(400, "invalid_body", message, field_of(message)) from None
    except msgspec.DecodeError as exc:
        raise ApiError(400, "malformed_json", f"the body is not JSON: {exc}") from None
    if raw:
        twice = _twice(json.loads(raw, object_pairs_hook=_mark_duplicates))
        if twice is not None:
            raise ApiError(
                400, "duplicate_key", f"the key {twice!r} is given twice in one object", twice
            )
    return body


def is_json(content_type: str) -> bool:
    """``application/json``, with no charset or UTF-8."""
    media, *params = (part.strip().lower() for part in content_type.split(";"))
    if media != "application/json":
        return False
    charsets = [p.partition("=")[2].strip('"') for p in params if p.startswith("charset=")]
    return all(charset in ("utf-8", "utf8") for charset in charsets)


def _not_json(declared: str | None) -> ApiError:
    said = f"not {declared!r}" if declared is not None else "and the request names none"
    return ApiError(
        415,
        "unsupported_media_type",
        f"the body must be JSON sent as Content-Type: application/json, {said}",
        "Content-Type",
    )


class _Twice:
    """What an object with a key given twice decodes to: the key's dotted
    path, completed by the objects and arrays around it as they decode."""

    __slots__ = ("path",)

    def __init__(self, path: str) -> None:
        self.path = path


def _mark_duplicates(pairs: list[tuple[str, object]]) -> object:
    seen: set[str] = set()
    for key, value in pairs:
        if key in seen:
            return _Twice(key)
        seen.add(key)
        inner = _twice(value)
        if inner is not None:
            return _Twice(f"{key}{inner}" if inner.startswith("[") else f"{key}.{inner}")
    return None


def _twice(value: object) -> str | None:
    """The path of the first key given twice inside ``value``, if any
    (objects decode to ``None`` or a :class:`_Twice`; arrays are looked
    through)."""
    if isinstance(value, _Twice):
        return value.path
    if isinstance(value, list):
        for index, item in enumerate(value):
            inner = _twice(item)
            if inner is not None:
                return f"[{index}]{inner}" if inner.startswith("[") else f"[{index}].{inner}"
    return None


async def _read(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdecimal() or int(declared) > limit):
        raise _too_large(limit)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _too_large(limit)
        chunks.append(chunk)
    return b"".join(chunks)


def field_of(message: str) -> str | None:
    """The field a msgspec error names, as a dotted path
    (``limits.max_steps``, ``attachments[0].data``), or ``None`` for the
    body as a whole."""
    at, named = _PATH.search(message), _FIELD.search(message)
    parts = [m.group(1) for m in (at, named) if m is not None and m.group(1)]
    return ".".join(parts) or None


def _too_large(limit: int) -> ApiError:
    return ApiError(413, "body_too_large", f"the body is larger than {limit} bytes")
