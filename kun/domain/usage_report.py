"""Usage of one thread, or of two side by side with their difference."""

from __future__ import annotations

from kun.contracts.usage import UsageTotals

_ROWS: tuple[tuple[str, str], ...] = (
    ("model calls", "calls"),
    ("prompt tokens", "prompt_tokens"),
    ("  cache hit", "cache_hit_tokens"),
    ("  cache miss", "cache_miss_tokens"),
    ("  cache write", "cache_write_tokens"),
    ("completion tokens", "completion_tokens"),
    ("  reasoning", "reasoning_tokens"),
    ("cost (USD)", "cost_usd"),
    ("unpriced calls", "unpriced_calls"),
)


def _cell(value: float, is_cost: bool) -> str:
    return f"{value:.6f}" if is_cost else f"{int(value):,}"


def _delta(a: float, b: float, is_cost: bool) -> str:
    diff = b - a
    if diff == 0:
        return "0"
    sign = "+" if diff > 0 else ""
    text = f"{sign}{diff:.6f}" if is_cost else f"{sign}{int(diff):,}"
    if a:
        text += f" ({sign}{diff / a * 100:.1f}%)"
    return text


def _cost_row(totals: list[UsageTotals]) -> list[str]:
    """Cost is ``unknown`` when no call was priced (never a made-up zero),
    and ends in ``+`` when some were not (the next row counts them)."""
    cells = []
    for t in totals:
        unknown = t.calls > 0 and t.unpriced_calls == t.calls
        cells.append(
            "unknown" if unknown else _cell(t.cost_usd, True) + "+" * (t.unpriced_calls > 0)
        )
    row = ["cost (USD)", *cells]
    if len(totals) == 2:
        known = "unknown" not in cells
        row.append(_delta(totals[0].cost_usd, totals[1].cost_usd, True) if known else "unknown")
    return row


def render_usage(labels: list[str], totals: list[UsageTotals]) -> list[str]:
    """One column per thread; with two threads a third column shows B - A."""
    header = ["", *labels] + (["delta (B - A)"] if len(totals) == 2 else [])
    rows = [header]
    for title, field in _ROWS:
        is_cost = field == "cost_usd"
        if is_cost:
            rows.append(_cost_row(totals))
            continue
        values = [float(getattr(t, field)) for t in totals]
        row = [title, *(_cell(v, is_cost) for v in values)]
        if len(values) == 2:
            row.append(_delta(values[0], values[1], is_cost))
        rows.append(row)
    rates = [
        f"{t.cache_hit_tokens / t.prompt_tokens:.1%}" if t.prompt_tokens else "-" for t in totals
    ]
    rows.append(["cache hit rate", *rates] + ([""] if len(totals) == 2 else []))
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    return [
        "  ".join(
            cell.ljust(widths[i]) if i == 0 else cell.rjust(widths[i]) for i, cell in enumerate(row)
        ).rstrip()
        for row in rows
    ]


def subagent_line(thread_id: str, usage: UsageTotals) -> str:
    """The line under the table for a thread that ran sub-agents: how much
    of its column was theirs (their side threads')."""
    priced = not (usage.calls and usage.unpriced_calls == usage.calls)
    cost = f"${usage.cost_usd:.6f}" if priced else "cost unknown"
    calls = f"{usage.calls:,} model call" + ("" if usage.calls == 1 else "s")
    tokens = usage.prompt_tokens + usage.completion_tokens
    return f"{thread_id}: includes its sub-agents: {calls}, {tokens:,} tokens, {cost}"
