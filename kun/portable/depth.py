"""JSON from another agent's session, no deeper than kun takes it.

A session line, or a string inside one that holds JSON (a tool call's
arguments, a shell tool's output), may nest far deeper than any real
record. Decoding it whole raises ``RecursionError`` at about a thousand
levels; below that it would still become a line every kun reader must
decode again, and a body sent to a model, from deeper stacks. So
:func:`decode_json` refuses anything nested more than :data:`MAX_DEPTH`
levels with :class:`TooDeep`, and the caller decides: a record is refused
naming its line, a string is kept as the text it is.
"""

from __future__ import annotations

import msgspec

__all__ = ["MAX_DEPTH", "TooDeep", "decode_json"]

MAX_DEPTH = 128
"""Deepest nesting of lists and objects taken; real records nest a dozen."""


class TooDeep(Exception):
    """JSON nested more than :data:`MAX_DEPTH` levels."""


def decode_json(data: str | bytes) -> object:
    """``data`` decoded; ``msgspec.DecodeError`` when it is not JSON,
    :class:`TooDeep` when it nests too deeply."""
    try:
        value = msgspec.json.decode(data)
    except RecursionError:
        raise TooDeep() from None
    if _deeper_than(value, MAX_DEPTH):
        raise TooDeep()
    return value


def _deeper_than(value: object, limit: int) -> bool:
    """Whether ``value`` nests lists and objects more than ``limit`` deep
    (walked without recursion: the point is a value too deep to recurse)."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if not isinstance(item, list):
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in item if isinstance(child, dict | list))
    return False
