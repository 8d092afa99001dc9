from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kun.contracts.usage import UsageSnapshot, UsageTotals
from kun.domain.turn_fold import UsageSum
from kun.domain.usage import add_usage, sum_usage


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


_tokens = st.integers(0, 10**6)
_calls = st.builds(
    UsageSnapshot,
    prompt_tokens=_tokens,
    completion_tokens=_tokens,
    reasoning_tokens=_tokens,
    cache_hit_tokens=_tokens,
    cache_miss_tokens=_tokens,
    cache_write_tokens=_tokens,
    cost_usd=st.one_of(st.none(), st.floats(0, 10, allow_nan=False)),
)


@given(st.lists(_calls, max_size=30), st.integers(0, 30))
def test_the_folds_running_sum_adds_exactly_as_add_usage(
    calls: list[UsageSnapshot], split: int
) -> None:
    """The reducer adds usage in place; its totals must be add_usage's to the
    last bit, whether it starts from zero or from a snapshot's totals."""
    running = UsageSum(UsageTotals())
    for call in calls[:split]:
        running.add(call)
    resumed = UsageSum(running.totals())
    for call in calls[split:]:
        resumed.add(call)
    expected = UsageTotals()
    for call in calls:
        expected = add_usage(expected, call)
    assert resumed.totals() == expected
