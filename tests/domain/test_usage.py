from __future__ import annotations

from kun.contracts.usage import UsageSnapshot
from kun.domain.usage import sum_usage


def test_summed_costs_carry_no_float_noise() -> None:
    total = sum_usage([UsageSnapshot(cost_usd=0.1), UsageSnapshot(cost_usd=0.2)])
    assert total.cost_usd == 0.3


def test_unknown_costs_are_counted_not_invented() -> None:
    total = sum_usage([UsageSnapshot(prompt_tokens=5, cost_usd=None), UsageSnapshot(cost_usd=1.5)])
    assert (total.calls, total.prompt_tokens, total.cost_usd, total.unpriced_calls) == (
        2,
        5,
        1.5,
        1,
    )
