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


def test_usage_of_a_log_skips_and_counts_repeated_seqs() -> None:
    from kun.contracts.events import Usage
    from kun.domain.usage import sum_usage_events

    def usage(seq: int, cost: float) -> Usage:
        return Usage(seq=seq, at=seq, thread_id="t", usage=UsageSnapshot(cost_usd=cost))

    total, repeated = sum_usage_events([usage(1, 0.5), usage(2, 0.25), usage(2, 0.25)])
    assert (total.calls, total.cost_usd, repeated) == (2, 0.75, 1)
