"""Helpers the built-ins share: blocking work off the event loop and its
cancellation, binary sniffing, output caps."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import anyio.from_thread
import anyio.to_thread

T = TypeVar("T")

BINARY_SNIFF_BYTES = 8192
"""A file with a NUL byte in its first 8 KB is binary (git's rule)."""


async def off_loop(fn: Callable[[], T], *, abandon_on_cancel: bool = True) -> T:
    """Run blocking filesystem work in a worker thread so a large read or
    search never stalls other threads' streams. Read-only work is abandoned
    on cancellation (its result is simply dropped); work that writes passes
    ``abandon_on_cancel=False`` so a file is never left half-written."""
    return await anyio.to_thread.run_sync(fn, abandon_on_cancel=abandon_on_cancel)


def check_cancelled() -> None:
    """Raise cancellation in a worker thread whose call was aborted, so a long
    loop in abandoned work stops instead of running on unseen (and keeping
    the process from exiting). A no-op outside a worker thread."""
    try:
        anyio.from_thread.check_cancelled()
    except RuntimeError:
        return


def looks_binary(head: bytes) -> bool:
    return b"\x00" in head[:BINARY_SNIFF_BYTES]


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def clip_line(line: str, limit: int) -> str:
    """``line`` cut to ``limit`` characters, saying so."""
    if len(line) <= limit:
        return line
    return f"{line[:limit]}... [line cut at {limit} of {len(line)} characters]"
