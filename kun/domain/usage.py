"""Usage arithmetic: adding one call's usage to a total."""

from __future__ import annotations

from collections.abc import Iterable

from kun.contracts.events import Event, SubagentStarted, Usage
from kun.contracts.usage import UsageSnapshot, UsageTotals

COST_DIGITS = 10
"""Decimal places kept in summed costs: a ten-billionth of a dollar."""


def add_usage(total: UsageTotals, call: UsageSnapshot) -> UsageTotals:
    """``total`` plus one call. Costs add in log order and are rounded to
    ``COST_DIGITS`` decimal places after each addition, so a replay and a fold
    over the same events give identical totals without float noise
    (0.1 + 0.2 is 0.3 here)."""
    cost = call.cost_usd
    return UsageTotals(
        calls=total.calls + 1,
        prompt_tokens=total.prompt_tokens + call.prompt_tokens,
        completion_tokens=total.completion_tokens + call.completion_tokens,
        reasoning_tokens=total.reasoning_tokens + call.reasoning_tokens,
        cache_hit_tokens=total.cache_hit_tokens + call.cache_hit_tokens,
        cache_miss_tokens=total.cache_miss_tokens + call.cache_miss_tokens,
        cache_write_tokens=total.cache_write_tokens + call.cache_write_tokens,
        cost_usd=round(total.cost_usd + cost, COST_DIGITS) if cost is not None else total.cost_usd,
        unpriced_calls=total.unpriced_calls + (cost is None),
    )


def add_totals(a: UsageTotals, b: UsageTotals) -> UsageTotals:
    """Two totals as one (a thread's and its sub-agents'); the cost rounded
    as :func:`add_usage` rounds it."""
    return UsageTotals(
        calls=a.calls + b.calls,
        prompt_tokens=a.prompt_tokens + b.prompt_tokens,
        completion_tokens=a.completion_tokens + b.completion_tokens,
        reasoning_tokens=a.reasoning_tokens + b.reasoning_tokens,
        cache_hit_tokens=a.cache_hit_tokens + b.cache_hit_tokens,
        cache_miss_tokens=a.cache_miss_tokens + b.cache_miss_tokens,
        cache_write_tokens=a.cache_write_tokens + b.cache_write_tokens,
        cost_usd=round(a.cost_usd + b.cost_usd, COST_DIGITS),
        unpriced_calls=a.unpriced_calls + b.unpriced_calls,
    )


def sum_usage(calls: list[UsageSnapshot]) -> UsageTotals:
    total = UsageTotals()
    for call in calls:
        total = add_usage(total, call)
    return total


def sum_usage_events(
    events: Iterable[Event], side_threads: list[str] | None = None
) -> tuple[UsageTotals, int]:
    """The totals of the ``usage`` events among ``events``, and how many
    events were skipped because their seq is not after the one before (a
    duplicated line must not be paid for twice; the fold refuses such a log,
    a usage comparison counts it once and says so). ``side_threads``, when
    given, gets the ids of the sub-agents' side threads the events name
    (``subagent_started``), whose usage is theirs."""
    total = UsageTotals()
    last = 0
    repeated = 0
    for event in events:
        if event.seq <= last:
            repeated += 1
            continue
        last = event.seq
        if type(event) is Usage:
            total = add_usage(total, event.usage)
        elif side_threads is not None and type(event) is SubagentStarted:
            side_threads.append(event.side_thread)
    return total, repeated
