"""Helpers the built-ins share: blocking work off the event loop, binary
sniffing, glob patterns, output caps."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TypeVar

import anyio.to_thread

from kun.tools.errors import InvalidArguments

T = TypeVar("T")

BINARY_SNIFF_BYTES = 8192
"""A file with a NUL byte in its first 8 KB is binary (git's rule)."""

_MAX_BRACE_ALTERNATIVES = 64


async def off_loop(fn: Callable[[], T], *, abandon_on_cancel: bool = True) -> T:
    """Run blocking filesystem work in a worker thread so a large read or
    search never stalls other threads' streams. Read-only work is abandoned
    on cancellation (its result is simply dropped); work that writes passes
    ``abandon_on_cancel=False`` so a file is never left half-written."""
    return await anyio.to_thread.run_sync(fn, abandon_on_cancel=abandon_on_cancel)


def looks_binary(head: bytes) -> bool:
    return b"\x00" in head[:BINARY_SNIFF_BYTES]


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def clip_line(line: str, limit: int) -> str:
    """``line`` cut to ``limit`` characters, saying so."""
    if len(line) <= limit:
        return line
    return f"{line[:limit]}... [line cut at {limit} of {len(line)} characters]"


def compile_glob(pattern: str) -> re.Pattern[str]:
    """A regex matching ``/``-separated relative paths against a glob:
    ``*`` and ``?`` stay within one path segment, ``**`` crosses segments
    (``**/`` also matches no directory at all), ``[...]`` is a class
    (``[!...]`` negated) and ``{a,b}`` lists alternatives."""
    alternatives = _expand_braces(pattern.removeprefix("./"))
    body = "|".join(_translate(p) for p in alternatives)
    try:
        return re.compile(f"(?:{body})\\Z", re.DOTALL)
    except re.error as exc:
        raise InvalidArguments(f"The glob pattern {pattern!r} is not valid: {exc}.") from exc


def _translate(pattern: str) -> str:
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and (end := _class_end(pattern, i)) > 0:
            body = pattern[i + 1 : end]
            negate = body[:1] in ("!", "^")
            body = body[1:] if negate else body
            escaped = body.replace("\\", "\\\\")
            out.append(f"[{'^/' if negate else ''}{escaped}]")
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return "".join(out)


def _class_end(pattern: str, start: int) -> int:
    """Index of the ``]`` closing the class opened at ``start``, or -1."""
    j = start + 1
    if j < len(pattern) and pattern[j] in "!^":
        j += 1
    if j < len(pattern) and pattern[j] == "]":
        j += 1
    return pattern.find("]", j)


def _expand_braces(pattern: str) -> list[str]:
    """``a{b,c}d`` -> ``[abd, acd]``, innermost-first, bounded."""
    results = [pattern]
    expanded: list[str] = []
    while results:
        current = results.pop()
        match = re.search(r"\{([^{}]*,[^{}]*)\}", current)
        if match is None:
            expanded.append(current)
        else:
            head, tail = current[: match.start()], current[match.end() :]
            results.extend(f"{head}{alt}{tail}" for alt in match.group(1).split(","))
        if len(results) + len(expanded) > _MAX_BRACE_ALTERNATIVES:
            raise InvalidArguments(
                f"The glob pattern {pattern!r} expands to more than "
                f"{_MAX_BRACE_ALTERNATIVES} alternatives; use fewer braces."
            )
    return expanded
