"""Token usage and cost of one model call, normalized across providers."""

from __future__ import annotations

import msgspec


class UsageSnapshot(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One model call's usage.

    ``prompt_tokens`` includes cached tokens (``cache_hit_tokens``) and tokens
    written to the cache (``cache_write_tokens``); ``cache_miss_tokens`` is the
    uncached part of the prompt. ``reasoning_tokens`` is part of
    ``completion_tokens``. ``cost_usd`` is ``None`` when the price is unknown:
    kun never makes a number up.
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0
    cache_hit_tokens: int = 0
    cache_miss_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float | None = None


class UsageTotals(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """A sum of usage snapshots, in log order.

    ``cost_usd`` sums the known costs; ``unpriced_calls`` counts the calls whose
    cost was unknown, so a total is never presented as complete when it is not.
    """

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0
    cache_hit_tokens: int = 0
    cache_miss_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float = 0.0
    unpriced_calls: int = 0
