"""Usage normalization: OpenAI-style and Anthropic-style semantics."""

from __future__ import annotations

from kun.contracts.usage import UsageSnapshot
from kun.model.usage import merge_usage, normalize_usage


def test_openai_style_prompt_includes_cached() -> None:
    assert normalize_usage(
        {
            "prompt_tokens": 100,
            "completion_tokens": 20,
            "prompt_tokens_details": {"cached_tokens": 60, "cache_write_tokens": 30},
            "completion_tokens_details": {"reasoning_tokens": 5},
        }
    ) == UsageSnapshot(
        prompt_tokens=100,
        completion_tokens=20,
        reasoning_tokens=5,
        cache_hit_tokens=60,
        cache_miss_tokens=40,
        cache_write_tokens=30,
    )


def test_anthropic_style_input_excludes_cache() -> None:
    assert normalize_usage(
        {
            "input_tokens": 10,
            "cache_read_input_tokens": 1000,
            "cache_creation_input_tokens": 200,
            "output_tokens": 7,
        }
    ) == UsageSnapshot(
        prompt_tokens=1210,
        completion_tokens=7,
        cache_hit_tokens=1000,
        cache_miss_tokens=210,
        cache_write_tokens=200,
    )


def test_garbage_values_count_as_zero_and_cost_only_when_numeric() -> None:
    snapshot = normalize_usage({"prompt_tokens": "12", "completion_tokens": None, "cost": "1"})
    assert snapshot == UsageSnapshot()
    assert normalize_usage({"prompt_tokens": 3, "cost": 0.5}).cost_usd == 0.5
    assert normalize_usage({"prompt_tokens": True}).prompt_tokens == 0


def test_merge_keeps_earlier_fields_and_ignores_nulls() -> None:
    merged = merge_usage({"input_tokens": 5, "output_tokens": 1}, {"output_tokens": 9, "x": None})
    assert merged == {"input_tokens": 5, "output_tokens": 9}
    assert merge_usage(merged, None) == merged
    assert merge_usage(None, {"a": 1}) == {"a": 1}
