"""Provider usage objects normalized into one :class:`UsageSnapshot`.

Two token semantics exist and confusing them fakes the cache hit rate:

* OpenAI style (chat completions, Responses, every compatible relay):
  ``prompt_tokens``/``input_tokens`` is the whole prompt; the cached part is
  reported beside it (``prompt_tokens_details.cached_tokens``, DeepSeek's
  ``prompt_cache_hit_tokens``/``prompt_cache_miss_tokens``, Moonshot's
  top-level ``cached_tokens``).
* Anthropic style: ``input_tokens`` excludes cache reads and cache writes,
  so the prompt is ``input + cache_read + cache_creation``. A usage object
  carrying ``cache_read_input_tokens`` or ``cache_creation_input_tokens`` is
  read this way whichever wire it came on (relays pass it through).
* Gemini style (``usageMetadata``, recognised by ``promptTokenCount`` or
  ``candidatesTokenCount``): ``promptTokenCount`` is the whole prompt,
  cached part included (``cachedContentTokenCount``), plus
  ``toolUsePromptTokenCount`` when a tool added to it; but
  ``candidatesTokenCount`` excludes the thinking, so the completion is
  ``candidates + thoughtsTokenCount`` and the reasoning is the thoughts.

The cost is the provider's own figure when it reports one (OpenRouter's
``usage.cost``); otherwise ``None`` here: pricing is applied later, by
whoever knows the price table.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kun.contracts.usage import UsageSnapshot

__all__ = ["merge_usage", "normalize_usage"]


def normalize_usage(raw: Mapping[str, Any]) -> UsageSnapshot:
    """Normalize one provider usage object (a decoded JSON object)."""
    if "promptTokenCount" in raw or "candidatesTokenCount" in raw:
        return _gemini(raw)
    if "cache_read_input_tokens" in raw or "cache_creation_input_tokens" in raw:
        return _anthropic(raw)
    return _openai(raw)


def merge_usage(base: dict[str, Any] | None, update: object) -> dict[str, Any] | None:
    """Fold a later usage report into an earlier one: present, non-null
    fields of ``update`` win (Anthropic's ``message_delta`` repeats only what
    changed). A null or non-object ``update`` changes nothing."""
    if not isinstance(update, dict):
        return base
    merged = dict(base) if base else {}
    merged.update((k, v) for k, v in update.items() if v is not None)
    return merged


def _anthropic(raw: Mapping[str, Any]) -> UsageSnapshot:
    uncached = _int(raw.get("input_tokens"))
    read = _int(raw.get("cache_read_input_tokens"))
    written = _int(raw.get("cache_creation_input_tokens"))
    return UsageSnapshot(
        prompt_tokens=uncached + read + written,
        completion_tokens=_int(raw.get("output_tokens")),
        cache_hit_tokens=read,
        cache_miss_tokens=uncached + written,
        cache_write_tokens=written,
        cost_usd=_cost(raw),
    )


def _gemini(raw: Mapping[str, Any]) -> UsageSnapshot:
    prompt = _int(raw.get("promptTokenCount")) + _int(raw.get("toolUsePromptTokenCount"))
    hit = min(_int(raw.get("cachedContentTokenCount")), prompt)
    thoughts = _int(raw.get("thoughtsTokenCount"))
    return UsageSnapshot(
        prompt_tokens=prompt,
        completion_tokens=_int(raw.get("candidatesTokenCount")) + thoughts,
        reasoning_tokens=thoughts,
        cache_hit_tokens=hit,
        cache_miss_tokens=prompt - hit,
        cost_usd=_cost(raw),
    )


def _openai(raw: Mapping[str, Any]) -> UsageSnapshot:
    prompt = _int(_first(raw, "prompt_tokens", "input_tokens"))
    prompt_details = _object(_first(raw, "prompt_tokens_details", "input_tokens_details"))
    output_details = _object(_first(raw, "completion_tokens_details", "output_tokens_details"))
    hit = _first(raw, "prompt_cache_hit_tokens")
    if hit is None:
        hit = prompt_details.get("cached_tokens")
    if hit is None:
        hit = raw.get("cached_tokens")
    hit_tokens = _int(hit)
    miss = raw.get("prompt_cache_miss_tokens")
    reasoning = output_details.get("reasoning_tokens")
    if reasoning is None:
        reasoning = raw.get("reasoning_tokens")
    return UsageSnapshot(
        prompt_tokens=prompt,
        completion_tokens=_int(_first(raw, "completion_tokens", "output_tokens")),
        reasoning_tokens=_int(reasoning),
        cache_hit_tokens=hit_tokens,
        cache_miss_tokens=_int(miss) if miss is not None else max(prompt - hit_tokens, 0),
        cache_write_tokens=_int(prompt_details.get("cache_write_tokens")),
        cost_usd=_cost(raw),
    )


def _first(raw: Mapping[str, Any], *names: str) -> Any:
    for name in names:
        value = raw.get(name)
        if value is not None:
            return value
    return None


def _object(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def _int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0
    return max(int(value), 0)


def _cost(raw: Mapping[str, Any]) -> float | None:
    value = raw.get("cost")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)
