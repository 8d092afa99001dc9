"""The vocabulary the golden threads are scripted in.

``Scene`` is a ``LogBuilder`` that also writes what the runtime writes around
each step (pipeline stages, provider-style ids, usage priced from a fixed
table), set in one fictional workspace whose files the scripts read. Pure: no
file IO, no clock, no randomness; the same calls build the same events.
"""

from __future__ import annotations

import copy
import hashlib
from datetime import UTC, datetime
from typing import Any, get_args

from kun.contracts import events as ev
from kun.contracts.items import ToolCall, ToolResult
from kun.contracts.usage import UsageSnapshot
from kun.domain.fork import fork_events
from kun.testing.logbuilder import LogBuilder

WORKSPACE = "/home/maya/src/ledger"
PRICE_TABLE = "models.dev@2026-11-21"
_PRICES: dict[str, tuple[str, float, float, float, float]] = {
    "claude-sonnet-4-5": ("anthropic", 3.0, 15.0, 0.30, 3.75),
    "claude-haiku-4-5": ("anthropic", 1.0, 5.0, 0.10, 1.25),
    "gpt-5": ("openai", 1.25, 10.0, 0.125, 0.0),
}
_TURN_STAGES = get_args(ev.PipelineStageName)[:8]
"""The stages before the first request is sent: setup … input_remembered."""


def epoch_ms(year: int, month: int, day: int, hour: int, minute: int, second: int) -> int:
    """A fixed UTC wall time in epoch milliseconds (a constant, not a clock)."""
    return int(datetime(year, month, day, hour, minute, second, tzinfo=UTC).timestamp() * 1000)


def chunks(text: str, n: int) -> list[str]:
    """``text`` cut at spaces into about ``n`` fragments, as a stream delivers it."""
    words = text.split(" ")
    size = max(1, -(-len(words) // n))
    groups = [" ".join(words[i : i + size]) for i in range(0, len(words), size)]
    return [g + " " for g in groups[:-1]] + groups[-1:]


class Scene(LogBuilder):
    """A ``LogBuilder`` that writes what the runtime writes around each step:
    pipeline stages, provider-style call ids and priced usage."""

    def __init__(self, thread_id: str, *, model: str, start_at: int) -> None:
        super().__init__(thread_id, start_at=start_at, tick_ms=3)
        self.model = model

    @property
    def provider(self) -> str:
        return _PRICES[self.model][0]

    def provider_id(self, prefix: str) -> str:
        digest = hashlib.sha256(f"{self.thread_id}:{self.seq}".encode()).hexdigest()
        return f"{prefix}{digest[:22]}"

    def open(self, title: str = "New Thread", **settings: Any) -> None:
        self.create(
            workspace=WORKSPACE,
            provider=self.provider,
            model=self.model,
            title=title,
            **settings,
        )

    def turn(self, text: str, **fields: Any) -> str:
        turn_id = self.start_turn(text, provider=self.provider, model=self.model, **fields)
        for stage in _TURN_STAGES:
            self.stage(stage)
        return turn_id

    def send(self, step: int, latency_ms: int = 900) -> None:
        self.stage("pre_send", step)
        self.stage("post_send", step)
        self.wait(latency_ms)

    def think(self, text: str, n: int = 3) -> str:
        return self.reasoning(chunks(text, n))

    def say(self, text: str, n: int = 4) -> str:
        return self.assistant_text(chunks(text, n))

    def call(self, name: str, arguments: dict[str, Any], *, fragments: int = 2) -> ToolCall:
        prefix = "toolu_01" if self.provider == "anthropic" else "call_"
        return self.tool_call(
            name, arguments, fragments=fragments, call_id=self.provider_id(prefix)
        )

    def finished(self, call: ToolCall, ms: int, status: str = "completed") -> None:
        self.emit(
            ev.ToolCallFinished,
            turn_id=self.turn_id,
            item_id=call.id,
            call_id=call.call_id,
            status=status,
            duration_ms=ms,
        )

    def result(self, call: ToolCall, output: str, *, code: str | None = None) -> None:
        self.item(
            ToolResult(
                id=self.next_id("res"),
                call_id=call.call_id,
                name=call.name,
                output=output,
                is_error=code is not None,
                code=code,
            )
        )

    def run(self, call: ToolCall, output: str, ms: int = 40) -> None:
        self.start_tool(call)
        self.wait(ms)
        self.finished(call, ms)
        self.result(call, output)

    def priced(
        self,
        step: int,
        prompt: int,
        completion: int,
        *,
        hit: int = 0,
        write: int = 0,
        reasoning: int = 0,
        in_turn: bool = True,
        model: str | None = None,
    ) -> None:
        """One model call's usage, priced from the table like the model layer
        does: prompt tokens include the cached and cache-written ones."""
        model = model or self.model
        provider, p_in, p_out, p_hit, p_write = _PRICES[model]
        miss = prompt - hit - write
        cost = (miss * p_in + hit * p_hit + write * p_write + completion * p_out) / 1_000_000
        snapshot = UsageSnapshot(
            prompt_tokens=prompt,
            completion_tokens=completion,
            reasoning_tokens=reasoning,
            cache_hit_tokens=hit,
            cache_miss_tokens=miss,
            cache_write_tokens=write,
            cost_usd=round(cost, 6),
        )
        self.emit(
            ev.Usage,
            turn_id=self.turn_id if in_turn else None,
            usage=snapshot,
            provider=provider,
            model=model,
            request_id=self.provider_id("req_011C" if provider == "anthropic" else "req_"),
            price_source=PRICE_TABLE,
            step=step,
        )

    def received(self, step: int) -> None:
        self.stage("response_received", step)

    def answer(self, step: int, text: str, prompt: int, completion: int, hit: int) -> None:
        """A last step that only talks, then the turn's end."""
        self.send(step, 1300)
        self.say(text, 5)
        self.priced(step, prompt, completion, hit=hit)
        self.received(step)
        self.complete("stop")


def fork_scene(source: Scene, thread_id: str, up_to_seq: int, wait_ms: int) -> Scene:
    """A scene continuing ``fork_events`` of ``source``: it shares the
    source's id counter, so ids stay unique across both logs."""
    at = source.at + wait_ms
    fork = copy.copy(source)
    fork.thread_id = thread_id
    fork.events = fork_events(source.events, thread_id, up_to_seq, at=at)
    fork.seq = fork.events[-1].seq
    fork.at = at
    fork.turn_id = None
    return fork


# -- the workspace's files, as the tools show them ----------------------------

INVOICES_PY = """\
     1\t\"\"\"Invoices: line items, tax and totals.\"\"\"
     2\t
     3\tfrom __future__ import annotations
     4\t
     5\tfrom dataclasses import dataclass, field
     6\tfrom decimal import Decimal
     7\t
     8\tfrom ledger.tax import invoice_tax, line_tax
     9\t
    10\t
    11\t@dataclass
    12\tclass Line:
    13\t    description: str
    14\t    amount: Decimal
    15\t    tax_rate: Decimal
    16\t
    17\t    def tax(self) -> Decimal:
    18\t        return line_tax(self.amount, self.tax_rate)
    19\t
    20\t
    21\t@dataclass
    22\tclass Invoice:
    23\t    number: str
    24\t    lines: list[Line] = field(default_factory=list)
    25\t
    26\t    def subtotal(self) -> Decimal:
    27\t        return sum((line.amount for line in self.lines), Decimal("0"))
    28\t
    29\t    def tax(self) -> Decimal:
    30\t        return sum((line.tax() for line in self.lines), Decimal("0"))
    31\t
    32\t    def total(self) -> Decimal:
    33\t        return self.subtotal() + self.tax()
"""

TAX_PY = """\
     1\t\"\"\"Tax arithmetic. Amounts are Decimals; rounding is half-up to the cent.\"\"\"
     2\t
     3\tfrom __future__ import annotations
     4\t
     5\tfrom decimal import ROUND_HALF_UP, Decimal
     6\t
     7\tCENT = Decimal("0.01")
     8\t
     9\t
    10\tdef line_tax(amount: Decimal, rate: Decimal) -> Decimal:
    11\t    \"\"\"Tax of one line, rounded to the cent (for display on the line).\"\"\"
    12\t    return (amount * rate).quantize(CENT, rounding=ROUND_HALF_UP)
    13\t
    14\t
    15\tdef invoice_tax(lines: list[tuple[Decimal, Decimal]]) -> Decimal:
    16\t    \"\"\"Tax of a whole invoice: exact per line, rounded once.\"\"\"
    17\t    total = sum((amount * rate for amount, rate in lines), Decimal("0"))
    18\t    return total.quantize(CENT, rounding=ROUND_HALF_UP)
"""

GREP_ROUNDING = """\
src/ledger/tax.py:12:    return (amount * rate).quantize(CENT, rounding=ROUND_HALF_UP)
src/ledger/tax.py:18:    return total.quantize(CENT, rounding=ROUND_HALF_UP)
src/ledger/export.py:41:        writer.writerow([inv.number, f"{round(inv.total(), 2)}"])
src/ledger/reports/vat.py:28:    return round(sum(rows), 2)
"""
