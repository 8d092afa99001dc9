"""Write the golden logs in ``events/golden/`` and the projections they replay to.

A golden log is a thread as the runtime writes it (``<name>.events.jsonl``)
next to the ``ThreadState`` that ``replay`` must build from it
(``<name>.expected.json``). Released logs are frozen: they are the proof that
every version kun ever wrote still replays, so this script refuses to rewrite
a log whose bytes would change (see ``events/CHANGELOG.md`` for how to freeze a
log under a versioned name before regenerating). Projections are rewritten
freely: a changed projection is a reviewed change to the reducer.

The threads are scripted with ``LogBuilder`` on a fixed clock and fixed ids,
so the same code always writes the same bytes.

Usage::

    python tools/make_golden.py            # write new logs, refresh projections
    python tools/make_golden.py --check    # exit 1 if anything would change
    python tools/make_golden.py --force    # also rewrite changed logs (unreleased only)
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec

from kun.contracts import events as ev
from kun.contracts.items import ErrorItem, Plan, ToolCall, ToolResult
from kun.contracts.threads import Goal, Todo
from kun.contracts.usage import UsageSnapshot
from kun.domain.fork import fork_events
from kun.domain.reduce import replay
from kun.domain.state import ThreadState
from kun.domain.upcast import upcast
from kun.testing.logbuilder import LogBuilder

ROOT = Path(__file__).resolve().parent.parent
GOLDEN_DIR = ROOT / "events" / "golden"
COMMAND = "python tools/make_golden.py"
LOG_SUFFIX = ".events.jsonl"
EXPECTED_SUFFIX = ".expected.json"

_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(ev.Event)
_raw_decoder = msgspec.json.Decoder()


def render_log(events: list[ev.Event]) -> bytes:
    """One event per line, each ending in ``\\n``: the log's wire format."""
    return _encoder.encode_lines(events)


def decode_event(line: bytes) -> ev.Event:
    """One line as the current contract sees it: upcast from the version it
    was written at (a no-op for current lines), then decoded strictly."""
    raw = _raw_decoder.decode(line)
    if isinstance(raw, dict):
        current = upcast(raw)
        if current is not raw:
            line = _encoder.encode(current)
    return _decoder.decode(line)


def decode_log(data: bytes) -> list[ev.Event]:
    """The events of a log; a line that does not decode names its number."""
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    events: list[ev.Event] = []
    for number, line in enumerate(lines, 1):
        try:
            events.append(decode_event(line))
        except (msgspec.DecodeError, LookupError) as exc:
            raise ValueError(f"line {number}: {exc}") from exc
    return events


def render_projection(state: ThreadState) -> bytes:
    """The expected file's exact bytes: the snapshot as indented JSON."""
    return msgspec.json.format(msgspec.json.encode(state), indent=2) + b"\n"


def expected_for(log: bytes) -> bytes:
    """What ``<name>.expected.json`` must hold for a log's bytes."""
    return render_projection(replay(decode_log(log)))


# -- the script vocabulary ---------------------------------------------------

WORKSPACE = "/home/maya/src/ledger"
PRICE_TABLE = "models.dev@2026-11-21"
_PRICES: dict[str, tuple[str, float, float, float, float]] = {
    "claude-sonnet-4-5": ("anthropic", 3.0, 15.0, 0.30, 3.75),
    "claude-haiku-4-5": ("anthropic", 1.0, 5.0, 0.10, 1.25),
    "gpt-5": ("openai", 1.25, 10.0, 0.125, 0.0),
}
_TURN_STAGES = (
    "setup",
    "pre_start",
    "post_start",
    "input_received",
    "input_cached",
    "input_routed",
    "input_compressed",
    "input_remembered",
)


def _epoch_ms(year: int, month: int, day: int, hour: int, minute: int, second: int) -> int:
    return int(datetime(year, month, day, hour, minute, second, tzinfo=UTC).timestamp() * 1000)


def _chunks(text: str, n: int) -> list[str]:
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
        return self.reasoning(_chunks(text, n))

    def say(self, text: str, n: int = 4) -> str:
        return self.assistant_text(_chunks(text, n))

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


# -- the threads -------------------------------------------------------------

_INVOICES_PY = """\
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

_TAX_PY = """\
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

_GREP_ROUNDING = """\
src/ledger/tax.py:12:    return (amount * rate).quantize(CENT, rounding=ROUND_HALF_UP)
src/ledger/tax.py:18:    return total.quantize(CENT, rounding=ROUND_HALF_UP)
src/ledger/export.py:41:        writer.writerow([inv.number, f"{round(inv.total(), 2)}"])
src/ledger/reports/vat.py:28:    return round(sum(rows), 2)
"""


def multi_step_tools() -> list[ev.Event]:
    """One turn, three model steps: a parallel batch of three read-only calls
    that finish out of order (results persisted in call order), an edit that
    waits for approval, then the answer."""
    s = Scene(
        "thr_01JDX6M3A8QKZC", model="claude-sonnet-4-5", start_at=_epoch_ms(2026, 11, 24, 9, 14, 3)
    )
    s.open()
    s.turn(
        "Invoice totals are off by a cent when an invoice has more than one tax line "
        "(see #412). Find the cause and fix it."
    )
    s.send(0, 1100)
    s.think(
        "A one-cent drift that appears only with several tax lines smells like rounding each "
        "line before summing. I need the total computation in invoices.py, the helpers in "
        "tax.py, and every place that rounds."
    )
    s.say("I'll read the invoice and tax modules and look for every rounding call.", 2)
    batch = [
        s.call("read_file", {"path": "src/ledger/invoices.py"}),
        s.call("read_file", {"path": "src/ledger/tax.py"}),
        s.call("grep", {"pattern": r"quantize|round\(", "path": "src/ledger"}, fragments=3),
    ]
    s.priced(0, 9_842, 287, write=9_216)
    s.received(0)
    for call in batch:
        s.start_tool(call)
    for call, ms in ((batch[2], 14), (batch[1], 9), (batch[0], 6)):
        s.wait(ms)
        s.finished(call, ms)
    for call, output in zip(batch, (_INVOICES_PY, _TAX_PY, _GREP_ROUNDING), strict=True):
        s.result(call, output)

    s.send(1, 1400)
    s.think(
        "Invoice.tax() sums Line.tax(), and line_tax quantizes each line, so every line "
        "carries up to half a cent of error. invoice_tax() already does it right (exact per "
        "line, rounded once) and is imported but unused. Switch Invoice.tax() to it."
    )
    edit = s.call(
        "edit_file",
        {
            "path": "src/ledger/invoices.py",
            "old_string": '        return sum((line.tax() for line in self.lines), Decimal("0"))',
            "new_string": (
                "        return invoice_tax([(line.amount, line.tax_rate) for line in self.lines])"
            ),
        },
        fragments=4,
    )
    s.priced(1, 13_960, 341, hit=9_216, write=4_118)
    s.received(1)
    s.start_tool(edit)
    approval = s.request_approval(edit, "Edit src/ledger/invoices.py: Invoice.tax() rounds once")
    s.wait(8_400)
    s.resolve_approval(approval, "approved")
    s.wait(11)
    s.finished(edit, 8_420)
    s.result(edit, "Edited src/ledger/invoices.py: 1 replacement (line 30).")

    s.answer(
        2,
        "Found it. `Invoice.tax()` added up `Line.tax()`, and `line_tax` rounds every line to "
        "the cent, so the error grows with each tax line: three lines of 10.05 at 7% give "
        "3 * 0.70 = 2.10, while the exact tax is 2.1105 → 2.11. `ledger.tax.invoice_tax` "
        "already sums exact amounts and rounds once; it was imported but never used. "
        "`Invoice.tax()` now calls it (src/ledger/invoices.py:30).\n\n"
        "I left `export.py:41` and `reports/vat.py:28` alone: they call `round()` on values "
        "that are already Decimals, harmless here but worth a look. Run "
        "`pytest tests/test_invoices.py` to confirm.",
        prompt=14_422,
        completion=196,
        hit=13_334,
    )
    return s.events


def aborted_turn() -> list[ev.Event]:
    """A completed turn, a turn interrupted mid-stream, one interrupted while
    ``bash`` ran (both sealed: open items become ``aborted``; the killed
    process's own end arrives after the abort and is counted as late), and
    one aborted with ``discard`` (only the user's message stays)."""
    s = Scene(
        "thr_01JDX8R5WN2F4T", model="claude-sonnet-4-5", start_at=_epoch_ms(2026, 11, 24, 16, 2, 41)
    )
    s.open(title="Credit notes and invoice finalization", title_auto=False)
    s.turn("What does `Invoice.finalize()` do?")
    s.send(0)
    s.run(
        s.call("read_file", {"path": "src/ledger/invoices.py", "offset": 34}),
        (
            "    34\t    def finalize(self, issued_on: date) -> None:\n"
            "    35\t        if self.issued_on is not None:\n"
            '    36\t            raise InvoiceError(f"{self.number} is already final")\n'
            "    37\t        self.issued_on = issued_on\n"
            "    38\t        self.number = next_number(issued_on.year)\n"
        ),
        ms=5,
    )
    s.priced(0, 8_611, 74, write=8_192)
    s.received(0)
    s.answer(
        1,
        "`finalize()` stamps the issue date and assigns the next number of that year's "
        "sequence. It refuses to run twice: a final invoice raises `InvoiceError`.",
        prompt=9_034,
        completion=58,
        hit=8_192,
    )

    s.turn("And how do credit notes interact with it?")
    s.send(0, 1200)
    s.think("Credit notes reference a final invoice by number; check the docstring first.", 2)
    s.text_deltas(_chunks("A credit note always points at a *final* invoice: it copies the", 3))
    s.wait(2_100)
    s.abort("interrupted")

    s.turn("Run the full test suite.")
    s.send(0)
    s.say("Running the whole suite; it takes about a minute.", 2)
    pytest = s.call("bash", {"command": "pytest -q", "timeout_ms": 600_000})
    s.priced(0, 9_377, 61, hit=8_192, write=1_060)
    s.received(0)
    s.start_tool(pytest)
    s.wait(41_000)
    bash_turn = s.turn_id
    s.abort("interrupted")
    s.wait(180)
    s.emit(
        ev.ToolCallFinished,
        turn_id=bash_turn,
        item_id=pytest.id,
        call_id=pytest.call_id,
        status="aborted",
        duration_ms=41_190,
    )

    s.turn("Refactor invoices.py to use attrs instead of dataclasses.")
    s.send(0, 1500)
    s.think("attrs is not a dependency yet; pyproject.toml needs it first.", 2)
    s.say("attrs isn't in pyproject.toml yet, so I'll add it first.", 2)
    s.emit(
        ev.ToolCallDelta,
        turn_id=s.turn_id,
        item_id=s.next_id("call"),
        call_id=s.provider_id("toolu_01"),
        name="read_file",
        arguments='{"path": "pypro',
    )
    s.abort("interrupted", discard=True)
    return s.events


def _export_turns(s: Scene) -> list[str]:
    """Three turns shaping a CLI flag, the history the rewind goldens cut."""
    t1 = s.turn("Add a `--since` option to `ledger export` that filters invoices by issue date.")
    s.send(0)
    s.run(
        s.call(
            "edit_file",
            {
                "path": "src/ledger/cli.py",
                "old_string": '@click.option("--format", type=click.Choice(["csv", "json"]))',
                "new_string": (
                    '@click.option("--format", type=click.Choice(["csv", "json"]))\n'
                    '@click.option("--since", type=click.DateTime(["%Y-%m-%d"]))'
                ),
            },
        ),
        "Edited src/ledger/cli.py: 1 replacement (line 52).",
    )
    s.priced(0, 7_904, 212, hit=6_144, reasoning=96)
    s.received(0)
    s.answer(1, "Added `--since YYYY-MM-DD` to `ledger export`.", 8_301, 22, hit=7_808)
    t2 = s.turn("Also accept relative dates like `7d` or `2w`.")
    s.send(0)
    s.say("I'll parse relative spans in a small helper next to the command.", 2)
    s.priced(0, 8_415, 340, hit=8_192, reasoning=180)
    s.received(0)
    s.complete("stop")
    s.turn("Now write tests for both forms.")
    s.send(0)
    s.run(
        s.call("write_file", {"path": "tests/test_export_since.py", "content": "import pytest\n"}),
        "Wrote tests/test_export_since.py (1 line).",
    )
    s.priced(0, 9_120, 655, hit=8_192, reasoning=240)
    s.received(0)
    s.answer(1, "Tests for both forms are in tests/test_export_since.py.", 9_890, 19, hit=9_088)
    return [t1, t2]


def rewound_thread() -> list[ev.Event]:
    """Three turns, a rewind before the second (it and the third are hidden,
    their usage still counts), then a new turn on the shortened history."""
    s = Scene("thr_01JDYB0T6C9HMP", model="gpt-5", start_at=_epoch_ms(2026, 11, 25, 10, 30, 0))
    s.open(title="ledger export --since")
    _, t2 = _export_turns(s)
    s.wait(95_000)
    s.rewind(t2)
    s.turn("Instead: `--since` takes an ISO-8601 date with a timezone, nothing relative.")
    s.send(0)
    s.say("Understood: `--since` now requires an offset, e.g. `2026-11-01T00:00+01:00`.", 3)
    s.priced(0, 8_377, 402, hit=7_808, reasoning=210)
    s.received(0)
    s.complete("stop")
    return s.events


def rewind_undone() -> list[ev.Event]:
    """A rewind undone: the hidden turns come back, the rewind stays on record
    with the seq that undid it, and work goes on."""
    s = Scene("thr_01JDYC7KQ1E5XV", model="gpt-5", start_at=_epoch_ms(2026, 11, 25, 14, 5, 12))
    s.open(title="ledger export --since")
    _, t2 = _export_turns(s)
    s.wait(20_000)
    rewind = s.rewind(t2)
    s.wait(6_000)
    s.undo_rewind(rewind)
    s.turn("Run the new tests.")
    s.send(0)
    s.run(
        s.call("bash", {"command": "pytest -q tests/test_export_since.py"}),
        "....                                                         [100%]\n4 passed in 0.21s\n",
        ms=1_840,
    )
    s.priced(0, 9_702, 38, hit=9_088)
    s.received(0)
    s.answer(1, "All 4 tests pass.", 9_811, 7, hit=9_600)
    return s.events


def forked_thread() -> list[ev.Event]:
    """A fork taken while the source's second turn was running a tool: the
    fork settles that turn as aborted (its work stays with the source), then
    goes its own way."""
    src = Scene(
        "thr_01JDZ4N8GB3YWA", model="claude-sonnet-4-5", start_at=_epoch_ms(2026, 11, 26, 8, 45, 30)
    )
    src.open(title="Slow monthly VAT report")
    src.turn("The monthly VAT report takes 40 s on production data. Why?")
    src.send(0)
    src.run(
        src.call("grep", {"pattern": "def monthly_vat", "path": "src/ledger"}),
        "src/ledger/reports/vat.py:14:def monthly_vat(session: Session, month: date) -> Decimal:\n",
    )
    src.priced(0, 8_804, 66, write=8_192)
    src.received(0)
    src.answer(
        1,
        "`monthly_vat` loads every invoice line of the month and sums in Python; the query "
        "has no index on `issued_on`.",
        9_150,
        41,
        hit=8_192,
    )
    src.turn("Rewrite the query to aggregate in SQL.")
    src.send(0)
    explain = src.call("bash", {"command": "psql ledger -c 'EXPLAIN ANALYZE SELECT ...'"})
    src.priced(0, 9_411, 93, hit=9_088)
    src.received(0)
    src.start_tool(explain)
    fork_at = src.seq
    src.wait(3_200)
    src.finished(explain, 3_200)
    src.result(explain, "Seq Scan on invoice_lines (actual time=0.02..39811.40 rows=2811402)")
    src.complete("stop")

    s = fork_scene(src, "thr_01JDZ5D2PX7RJS", fork_at, wait_ms=240_000)
    s.update(title="Slow monthly VAT report (index)", title_auto=False)
    s.turn("Try a covering index on (issued_on, amount, tax_rate) instead of rewriting the query.")
    s.send(0)
    s.run(
        s.call(
            "write_file",
            {
                "path": "migrations/0043_invoice_lines_issued_on_idx.sql",
                "content": (
                    "CREATE INDEX CONCURRENTLY invoice_lines_issued_on_idx\n"
                    "    ON invoice_lines (issued_on) INCLUDE (amount, tax_rate);\n"
                ),
            },
        ),
        "Wrote migrations/0043_invoice_lines_issued_on_idx.sql (2 lines).",
    )
    s.priced(0, 9_530, 118, hit=9_088)
    s.received(0)
    s.answer(
        1,
        "Added migration 0043 with a covering index; `monthly_vat` can now use an index-only "
        "scan. Apply it with `ledger db migrate`.",
        9_870,
        36,
        hit=9_472,
    )
    return s.events


def orphaned_turn() -> list[ev.Event]:
    """The process died mid-turn: on restart the turn fails with ``orphaned``;
    the started ``bash`` call is ``unknown_after_crash`` (it may have run),
    its open approval ``expired``, the open question ``cancelled``."""
    s = Scene(
        "thr_01JE0H6V4M8TQB", model="claude-sonnet-4-5", start_at=_epoch_ms(2026, 11, 27, 22, 41, 9)
    )
    s.open(title="Apply migration 0043", approval_policy="on-request")
    s.turn("Apply migration 0043, then tell me which environment you used.")
    s.send(0)
    s.say("I'll apply it and ask which environment you want.", 2)
    migrate = s.call("bash", {"command": "ledger db migrate --to 0043"})
    ask = s.call("request_user_input", {"question": "Staging or production?"})
    s.priced(0, 9_266, 104, write=9_216)
    s.received(0)
    s.start_tool(migrate)
    s.start_tool(ask)
    s.request_approval(migrate, "Run `ledger db migrate --to 0043` (writes to the database)")
    s.ask_user("Which environment should the migration run against?", ("staging", "production"))
    s.wait(3_600_000)
    s.item(
        ErrorItem(
            id=s.next_id("err"),
            code="orphaned",
            message="kun stopped while this turn was running; it was settled on restart.",
        )
    )
    s.fail("orphaned", "the process that ran this turn (pid 48213) is gone")
    return s.events


def _everything_source() -> Scene:
    s = Scene(
        "thr_01JE1A2B3C4D5E", model="claude-sonnet-4-5", start_at=_epoch_ms(2026, 11, 28, 9, 0, 0)
    )
    s.open(title="CSV export")
    s.turn("Summarize what src/ledger/export.py does.")
    s.send(0)
    s.run(
        s.call("read_file", {"path": "src/ledger/export.py", "limit": 60}),
        '     1\t"""Export invoices as CSV or JSON."""\n'
        "    38\tdef export(invoices: Iterable[Invoice], out: TextIO) -> int:\n",
    )
    s.priced(0, 8_900, 54, write=8_704)
    s.received(0)
    s.answer(1, "It writes one CSV row per invoice: number, date and total.", 9_120, 18, hit=8_704)
    return s


def _goal_turn(s: Scene) -> None:
    """Steering, a question, a denied and an approved edit, a tool storm."""
    s.turn("Work on the goal. Start with the --since flag.")
    s.send(0)
    s.think("The flag needs a parser; check what the CLI already imports for dates.", 2)
    s.say("Looking at how dates are parsed today.", 2)
    s.run(
        s.call("grep", {"pattern": "fromisoformat", "path": "src/ledger"}),
        "src/ledger/cli.py:77:    day = date.fromisoformat(value)\n",
    )
    s.priced(0, 10_240, 120, hit=8_704, write=1_408)
    s.received(0)
    s.send(1)
    ask = s.call("request_user_input", {"question": "Relative dates or ISO only?"})
    s.priced(1, 10_480, 48, hit=10_112)
    s.received(1)
    s.start_tool(ask)
    request = s.ask_user("Should --since accept relative dates like 7d?", ("ISO-8601 only", "Both"))
    s.wait(14_000)
    s.answer_user(request, "ISO-8601 only")
    s.finished(ask, 14_010)
    s.result(ask, "The user answered: ISO-8601 only")
    s.steer("Also reject naive datetimes.")
    s.user_message("Also reject naive datetimes.", steered=True)
    s.send(2)
    denied = s.call(
        "edit_file",
        {
            "path": "src/ledger/cli.py",
            "old_string": "    day = date.fromisoformat(value)",
            "new_string": "    moment = parse_aware_datetime(value)",
        },
    )
    s.priced(2, 10_690, 131, hit=10_368)
    s.received(2)
    s.start_tool(denied)
    approval = s.request_approval(denied, "Edit src/ledger/cli.py: parse --since as aware")
    s.wait(5_000)
    s.emit(
        ev.ApprovalResolved,
        turn_id=s.turn_id,
        approval_id=approval,
        decision="denied",
        reason="Keep cli.py as is; put the parsing in export.py.",
    )
    s.finished(denied, 5_004, "failed")
    s.result(denied, "The user denied this edit: keep cli.py as is.", code="approval_denied")
    for step in (3, 4, 5):
        s.send(step, 600)
        repeat = s.call("read_file", {"path": "src/ledger/export.py"})
        s.priced(step, 10_800 + 150 * step, 30, hit=10_624)
        s.received(step)
        if step < 5:
            s.run(repeat, '     1\t"""Export invoices as CSV or JSON."""\n', ms=4)
            continue
        s.emit(
            ev.ToolStormSuppressed,
            turn_id=s.turn_id,
            call_id=repeat.call_id,
            name="read_file",
            repeats=3,
        )
        s.item(msgspec.structs.replace(repeat, status="failed"))
        s.result(
            repeat,
            "Suppressed: third identical call. Continue from the last result.",
            code="tool_storm_suppressed",
        )
    s.answer(6, "Parsing lives in export.py now; naive datetimes are rejected.", 11_900, 25, 11_520)


_PLAN = """\
# Finish `ledger export --since`

- [x] Parse `--since` as an aware ISO-8601 datetime in export.py
- [ ] Tests: aware, naive (rejected), and no `--since`
- [ ] docs/export.md: a `--since` section with two examples
"""
_TODOS_AFTER_PLAN = (
    Todo(content="Parse --since as an aware ISO-8601 datetime", status="completed"),
    Todo(content="Tests: aware, naive (rejected), no --since", status="in_progress"),
    Todo(content="docs/export.md: --since section"),
)


def _plan_turn(s: Scene) -> None:
    """A plan-mode turn: a plan item created, updated and completed, todos
    synced from its checkboxes, and an answer cut at the output limit."""
    s.turn("Plan the tests and docs before writing anything.", plan_mode=True)
    s.send(0)
    markdown = _PLAN.replace("[x]", "[ ]")
    create = s.call("create_plan", {"markdown": markdown}, fragments=3)
    s.priced(0, 11_500, 210, hit=11_264)
    s.received(0)
    s.start_tool(create)
    plan = Plan(id=s.next_id("plan"), status="in_progress", markdown=markdown)
    s.emit(ev.ItemCreated, turn_id=s.turn_id, item=plan)
    plan = msgspec.structs.replace(plan, markdown=_PLAN)
    s.emit(ev.ItemUpdated, turn_id=s.turn_id, item=plan)
    s.finished(create, 12)
    s.emit(
        ev.ItemCompleted, turn_id=s.turn_id, item=msgspec.structs.replace(plan, status="completed")
    )
    s.result(create, "Plan saved (3 steps, 1 already done).")
    s.update(todos=_TODOS_AFTER_PLAN)
    s.send(1)
    s.say("The plan covers tests for aware and naive datetimes, then a docs section", 3)
    s.priced(1, 11_800, 4_096, hit=11_520)
    s.received(1)
    s.warning(
        "output_truncated",
        "The answer hit max_output_tokens (4096); raise it or ask for smaller steps.",
    )
    s.complete("length")


def everything() -> list[ev.Event]:
    """Every event kind at least once, in a fork of a settled thread: goal and
    todos, steering, questions, approvals, a tool storm, a plan, a delegated
    turn, an aborted turn rewound and restored, and a crash with a torn tail
    repaired on restart."""
    src = _everything_source()
    s = fork_scene(src, "thr_01JE1F6G7H8J9K", src.seq, wait_ms=60_000)
    s.warning(
        "price_table_stale", "models.dev prices are 9 days old; costs may be off.", in_turn=False
    )
    s.update(
        goal=Goal(
            objective="Ship `ledger export --since` with tests and docs",
            token_budget=2_000_000,
            created_at=s.at,
        ),
        todos=(
            Todo(content="Add --since to ledger export", status="in_progress"),
            Todo(content="Write tests for --since"),
            Todo(content="Document --since in docs/export.md"),
        ),
    )
    _goal_turn(s)
    s.priced(0, 412, 9, in_turn=False, model="claude-haiku-4-5")
    s.update(title="ledger export --since", title_auto=True)
    _plan_turn(s)

    s.update(provider="claude-code")
    s.start_turn("Write the docs section for --since.", provider="claude-code", model=s.model)
    s.emit(
        ev.DelegatedRuntime,
        turn_id=s.turn_id,
        engine="claude-agent-sdk",
        mode="rebased",
        reason="no SDK session checkpoint for this thread",
        session_id="sdk_7c41e9",
    )
    s.say("Added a `--since` section to docs/export.md with two examples.", 3)
    s.priced(0, 14_300, 610, hit=12_288)
    s.complete("stop")
    s.update(provider="anthropic")

    aborted = s.turn("Also add a --until flag.")
    s.send(0)
    s.text_deltas(_chunks("Sure, `--until` mirrors", 2))
    s.abort("interrupted")
    rewind = s.rewind(aborted)
    s.undo_rewind(rewind)

    s.turn("Run the tests.")
    s.send(0)
    tests = s.call("bash", {"command": "pytest -q tests/test_export.py"})
    s.priced(0, 15_020, 34, hit=14_848)
    s.received(0)
    s.start_tool(tests)
    s.wait(1_800_000)
    _crash_and_restart(s, tests)
    return s.events


def _crash_and_restart(s: Scene, running: ToolCall) -> None:
    """The process died while writing ``running``'s end: on restart the
    writer cuts the torn line (``log_repaired``) and reconciliation fails the
    turn as ``orphaned``."""
    lost = ev.ToolCallFinished(
        seq=s.seq + 1,
        at=s.at,
        thread_id=s.thread_id,
        turn_id=s.turn_id,
        item_id=running.id,
        call_id=running.call_id,
        duration_ms=1_800_000,
    )
    torn = msgspec.json.encode(lost)[:97]
    s.wait(52_000)
    s.emit(
        ev.LogRepaired,
        dropped_bytes=len(torn),
        line=s.seq + 1,
        reason="torn tail: the last line has no newline",
        preview=torn.decode()[:60],
    )
    s.item(
        ErrorItem(
            id=s.next_id("err"),
            code="orphaned",
            message="kun stopped while this turn was running; it was settled on restart.",
        )
    )
    s.fail("orphaned", "the process that ran this turn (pid 51877) is gone")


THREADS: dict[str, Callable[[], list[ev.Event]]] = {
    "multi_step_tools": multi_step_tools,
    "aborted_turn": aborted_turn,
    "rewound_thread": rewound_thread,
    "rewind_undone": rewind_undone,
    "forked_thread": forked_thread,
    "orphaned_turn": orphaned_turn,
    "everything": everything,
}
"""The golden threads this version writes, by file stem."""


# -- writing -----------------------------------------------------------------


def build() -> dict[str, bytes]:
    """Every file the scripts produce, by file name: each log and the
    projection it replays to."""
    files: dict[str, bytes] = {}
    for name, script in THREADS.items():
        log = render_log(script())
        files[name + LOG_SUFFIX] = log
        files[name + EXPECTED_SUFFIX] = expected_for(log)
    return files


def pending_writes(
    golden_dir: Path = GOLDEN_DIR, *, force: bool = False
) -> tuple[dict[Path, bytes], list[Path]]:
    """What a run would write, and the frozen logs it refuses to change.

    A scripted log is written when it is new (or with ``force``); every log
    in the directory, scripted or frozen under another name, gets its
    projection recomputed from the bytes on disk."""
    writes: dict[Path, bytes] = {}
    refused: list[Path] = []
    logs: dict[Path, bytes] = {p: p.read_bytes() for p in sorted(golden_dir.glob("*" + LOG_SUFFIX))}
    for name, data in build().items():
        path = golden_dir / name
        if not name.endswith(LOG_SUFFIX) or logs.get(path) == data:
            continue
        if path in logs and not force:
            refused.append(path)
            continue
        writes[path] = logs[path] = data
    for log_path, data in logs.items():
        if log_path in refused:
            continue
        expected_path = log_path.with_name(log_path.name.removesuffix(LOG_SUFFIX) + EXPECTED_SUFFIX)
        expected = expected_for(data)
        if not expected_path.is_file() or expected_path.read_bytes() != expected:
            writes[expected_path] = expected
    return writes, refused


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if anything would change")
    parser.add_argument("--force", action="store_true", help="rewrite changed logs too")
    args = parser.parse_args(argv)
    GOLDEN_DIR.mkdir(parents=True, exist_ok=True)
    writes, refused = pending_writes(force=args.force)
    for path in refused:
        print(
            f"{path.relative_to(ROOT)} would change, but released logs are frozen: rename it "
            f"(and its {EXPECTED_SUFFIX}) to <name>.v<N>{LOG_SUFFIX} and run again, "
            "or pass --force if it was never released",
            file=sys.stderr,
        )
    if args.check:
        for path in writes:
            print(f"{path.relative_to(ROOT)} is stale: run `{COMMAND}`", file=sys.stderr)
        return 1 if writes or refused else 0
    if refused:
        return 1
    for path, data in writes.items():
        path.write_bytes(data)
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
