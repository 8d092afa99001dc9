"""The writer's clock: epoch milliseconds, the unit of every event's ``at``.

A plain function so tests can hand the recorder a fake (any ``() -> int``).
Wall time, not monotonic: ``at`` is read by people and compared across
processes. Nothing in kun relies on it being monotonic; delta coalescing only
uses differences of it, and a clock step merely ends a window early or late.
"""

from __future__ import annotations

import time

__all__ = ["now_ms"]


def now_ms() -> int:
    """Milliseconds since the Unix epoch."""
    return time.time_ns() // 1_000_000
