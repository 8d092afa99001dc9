"""Identifiers: time-sortable, URL-safe, and valid as thread ids.

Two kinds, one shape ``<prefix>_<time><random>`` (10 characters of the
millisecond timestamp, then random characters, all lowercase Crockford
base32, whose alphabet is in ASCII order, so string order is time order):

- :func:`new_id` (16 random characters, 80 bits): ids that must be unique
  everywhere, because something finds them with no thread at hand: threads,
  approvals (``POST /v1/approvals/{id}``), user-input requests.
- :func:`new_thread_local_id` (4 random characters): ids only ever looked up
  inside one thread's log, turns and items, which every delta line of the
  log repeats (issue 10: 12 bytes less each). A turn is looked up among its
  thread's turns (``/v1/threads/{id}/turns/{turn}``, ``kun replay`` turn
  references), an item among its turn's items; a fork copies a thread's
  events, so the same ids in two threads are expected already.

Within one process each kind is strictly increasing, whatever the clock
does: an id minted in the same millisecond as the last one (or after the
clock stepped back) takes the last one's time and its random part plus one.
So two thread-local ids can only be equal if two processes mint them for the
same thread in the same millisecond and draw the same 20 bits, and a thread
has one writer at a time (the store's lock), which mints all its turn's ids.
Ids of both kinds are opaque strings to everything else: old logs with long
turn and item ids read and continue as before (a short id never equals a
long one, having another length).
"""

from __future__ import annotations

import re
import secrets
import threading
import time
from collections.abc import Callable

__all__ = ["IdMinter", "new_id", "new_thread_local_id"]

_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"
TIME_CHARS = 10
_PREFIX = re.compile(r"[a-z0-9]{1,32}")


def _base32(value: int, width: int) -> str:
    chars = []
    for _ in range(width):
        chars.append(_ALPHABET[value & 31])
        value >>= 5
    return "".join(reversed(chars))


class IdMinter:
    """Strictly increasing ids with ``random_chars`` random characters;
    ``clock_ns`` and ``randbits`` are there for tests to drive."""

    def __init__(
        self,
        random_chars: int,
        *,
        clock_ns: Callable[[], int] = time.time_ns,
        randbits: Callable[[int], int] = secrets.randbits,
    ) -> None:
        self.random_chars = random_chars
        self._bits = 5 * random_chars
        self._clock_ns = clock_ns
        self._randbits = randbits
        self._lock = threading.Lock()
        self._last_ms = -1
        self._last_random = 0

    def __call__(self, prefix: str) -> str:
        """A new id ``<prefix>_<time><random>``; ``prefix`` is 1-32 of ``[a-z0-9]``."""
        if _PREFIX.fullmatch(prefix) is None:
            raise ValueError(f"id prefix {prefix!r} must be 1-32 characters of [a-z0-9]")
        bits = self._bits
        with self._lock:
            ms = self._clock_ns() // 1_000_000
            if ms > self._last_ms:
                random = self._randbits(bits)
            else:
                ms, random = self._last_ms, self._last_random + 1
                if random >> bits:
                    ms, random = ms + 1, 0
            self._last_ms, self._last_random = ms, random
        return f"{prefix}_{_base32(ms, TIME_CHARS)}{_base32(random, self.random_chars)}"


new_id = IdMinter(16)
"""A globally unique id: ``new_id("thr")`` is ``thr_`` + 26 characters."""

new_thread_local_id = IdMinter(4)
"""An id unique within one thread: ``new_thread_local_id("txt")`` is ``txt_``
+ 14 characters."""
