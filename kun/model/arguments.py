"""Turning a tool call's streamed argument text into a JSON object.

Models produce broken arguments: a Markdown fence around the JSON, prose
before or after it, raw newlines inside strings, JSON cut off by the output
budget, nothing at all for a zero-parameter tool. :func:`repair_arguments`
tries, in this order, and stops at the first that yields an object:

1. the text as JSON (valid JSON is never "repaired" into something else);
2. empty or blank text, or ``null`` -> ``{}`` (a zero-parameter tool);
3. the text as JSON with raw control characters allowed inside strings;
4. the body of a Markdown code fence (```json ... ```);
5. the first balanced ``{...}`` (braces inside strings and after escapes
   are skipped, so ``{"a": "}"}`` is one object);
6. the single object inside the first balanced ``[...]`` (models sometimes
   wrap the arguments in a list; a text that is exactly such a list takes
   this step at once, since an object found inside it by step 5 would hide
   the wrapping);
7. ``{"__raw": text}``: not a repair but a readable failure: the tool
   rejects it, the model sees why and retries.

Any other valid JSON that is not an object (a number, a string, a longer
list) goes to the last step: a tool's arguments are an object, and a guess
would be worse. So does JSON nested deeper than ``MAX_DEPTH``: kept as it
is, it would make the event that records the call unreadable.
"""

from __future__ import annotations

import json
import re
from typing import Any

import msgspec

from kun.contracts.model import ArgumentRepair

__all__ = ["RepairedArguments", "repair_arguments"]

_FENCE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\r?\n?(.*?)```", re.DOTALL)
_MAX_CANDIDATES = 32
MAX_DEPTH = 64
"""Deepest nesting of arguments kept as JSON; deeper ones become ``__raw``."""

_decode = msgspec.json.Decoder().decode
_encode = msgspec.json.Encoder().encode


class RepairedArguments(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """The arguments as compact JSON bytes of an object, and how they were got."""

    json: bytes
    method: ArgumentRepair


def repair_arguments(text: str) -> RepairedArguments:
    """Return ``text`` as a JSON object, repaired if need be. Never raises."""
    value = _parse(text, lenient=False)
    if isinstance(value, dict):
        return RepairedArguments(json=_encode(value), method="none")
    if value is None:
        return RepairedArguments(json=b"{}", method="empty")
    if _single_object(value):
        return RepairedArguments(json=_encode(value[0]), method="array")
    if value is _INVALID:
        if not text.strip():
            return RepairedArguments(json=b"{}", method="empty")
        value = _parse(text, lenient=True)
        if isinstance(value, dict):
            return RepairedArguments(json=_encode(value), method="lenient")
        found = _salvage(text)
        if found is not None:
            return found
    return RepairedArguments(json=_encode({"__raw": text}), method="raw")


def _salvage(text: str) -> RepairedArguments | None:
    fence = _FENCE.search(text)
    if fence is not None:
        value = _parse(fence.group(1).strip(), lenient=True)
        if isinstance(value, dict):
            return RepairedArguments(json=_encode(value), method="fence")
    value = _first_balanced(text, "{", "}")
    if isinstance(value, dict):
        return RepairedArguments(json=_encode(value), method="object")
    value = _first_balanced(text, "[", "]")
    if _single_object(value):
        return RepairedArguments(json=_encode(value[0]), method="array")
    return None


def _single_object(value: Any) -> bool:
    return isinstance(value, list) and len(value) == 1 and isinstance(value[0], dict)


class _Invalid:
    pass


_INVALID: Any = _Invalid()


def _parse(text: str, *, lenient: bool) -> Any:
    """Decode JSON, or ``_INVALID``. ``lenient`` admits raw control characters
    inside strings (``json`` with ``strict=False``); msgspec is tried first.
    A value nested deeper than ``MAX_DEPTH`` is ``_INVALID`` too: recorded in
    the log, it would make the line unreadable (the decoders stop near a
    thousand levels, fewer on a deep stack)."""
    try:
        value = _decode(text)
    except RecursionError:
        return _INVALID
    except msgspec.DecodeError:
        if not lenient:
            return _INVALID
        try:
            value = json.loads(text, strict=False)
        except (ValueError, RecursionError):
            return _INVALID
    return _INVALID if _nests_deeper(value, MAX_DEPTH) else value


def _nests_deeper(value: Any, limit: int) -> bool:
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def _first_balanced(text: str, open_: str, close: str) -> Any:
    """The first balanced ``open_ ... close`` span that decodes, or ``_INVALID``.

    Spans are tried from each opening bracket in turn (at most
    ``_MAX_CANDIDATES``), so prose like ``use {x} like {"a": 1}`` still
    yields the object.
    """
    start = text.find(open_)
    tries = 0
    while start != -1 and tries < _MAX_CANDIDATES:
        tries += 1
        end = _balanced_end(text, start, open_, close)
        if end == -1:
            return _INVALID
        value = _parse(text[start : end + 1], lenient=True)
        if value is not _INVALID:
            return value
        start = text.find(open_, start + 1)
    return _INVALID


def _balanced_end(text: str, start: int, open_: str, close: str) -> int:
    """Index of the bracket closing the one at ``start``, or -1. Brackets
    inside JSON strings, and characters after a backslash there, are skipped."""
    depth = 0
    in_string = False
    escaped = False
    for i in range(start, len(text)):
        ch = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch == open_:
            depth += 1
        elif ch == close:
            depth -= 1
            if depth == 0:
                return i
    return -1
