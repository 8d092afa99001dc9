"""Identifiers: time-sortable, URL-safe, and valid as thread ids.

``new_id("thr")`` gives ``thr_`` + 10 characters of the millisecond timestamp +
16 random characters, all in lowercase Crockford base32 (whose alphabet is in
ASCII order, so string order is time order). Within one process ids are also
strictly increasing: two ids minted in the same millisecond differ by one in
their random part, so events, turns and threads created back to back sort in
creation order.
"""

from __future__ import annotations

import re
import secrets
import threading
import time

__all__ = ["new_id"]

_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"
_TIME_CHARS = 10
_RANDOM_CHARS = 16
_RANDOM_BITS = 5 * _RANDOM_CHARS
_PREFIX = re.compile(r"[a-z0-9]{1,32}")

_lock = threading.Lock()
_last_ms = -1
_last_random = 0


def _base32(value: int, width: int) -> str:
    chars = []
    for _ in range(width):
        chars.append(_ALPHABET[value & 31])
        value >>= 5
    return "".join(reversed(chars))


def new_id(prefix: str) -> str:
    """A new id ``<prefix>_<time><random>``; ``prefix`` is 1-32 of ``[a-z0-9]``."""
    global _last_ms, _last_random
    if _PREFIX.fullmatch(prefix) is None:
        raise ValueError(f"id prefix {prefix!r} must be 1-32 characters of [a-z0-9]")
    with _lock:
        ms = time.time_ns() // 1_000_000
        if ms > _last_ms:
            random = secrets.randbits(_RANDOM_BITS)
        else:
            ms, random = _last_ms, _last_random + 1
            if random >> _RANDOM_BITS:
                ms, random = ms + 1, 0
        _last_ms, _last_random = ms, random
    return f"{prefix}_{_base32(ms, _TIME_CHARS)}{_base32(random, _RANDOM_CHARS)}"
