"""Reading the API's request bodies into their Structs
(:mod:`kun.app.requests`, which the in-process adapter and the Python
client share, and :mod:`kun.server.openapi` publishes). A body is read
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

"""

from __future__ import annotations

import json
import re
from typing import TypeVar

import msgspec
from starlette.requests import Request

from kun.app.requests import (
    _ONE_LINE_SAID,
    _REGEX_SAID,
    MAX_BODY_BYTES,
    AnswerApproval,
    AnswerUserInput,
    ChangeGoal,
    Collect,
    CreateThread,
    Fork,
    Interrupt,
    Limits,
    NoBody,
    RestoreThread,
    RewindThread,
    SetGoal,
    StartTurn,
    Steer,
    UpdateThread,
    Upload,
    _Body,
)
from kun.server.errors import ApiError

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
    "NoBody",
    "RestoreThread",
    "RewindThread",
    "SetGoal",
    "StartTurn",
    "Steer",
    "UpdateThread",
    "Upload",
    "field_of",
    "is_json",
    "read_body",
]

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
