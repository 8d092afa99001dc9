"""The golden threads: scripted logs of the situations replay must get right.

Each function returns one thread's events as the runtime writes them, on a
fixed clock with fixed ids, so the same code always builds the same log.
``tools/make_golden.py`` writes them to ``events/golden/``; ``kun demo``
replays ``multi_step_tools`` through the real store. Pure: no file IO, no
clock, no randomness.
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from kun.contracts import events as ev
from kun.contracts.items import (
    Attachment,
    BlobRef,
    ErrorItem,
    FileCheckpoint,
    ToolCall,
    ToolResult,
    UserMessage,
)
from kun.contracts.threads import Todo
from kun.contracts.usage import UsageSnapshot
from kun.testing.golden_everything import everything
from kun.testing.scene import (
    GREP_ROUNDING,
    INVOICES_PY,
    TAX_PY,
    Scene,
    chunks,
    epoch_ms,
    fork_scene,
)


def multi_step_tools() -> list[ev.Event]:
    """One turn, three model steps: a parallel batch of three read-only calls
    that finish out of order (results persisted in call order), an edit that
    waits for approval, then the answer."""
    s = Scene(
        "thr_01JDX6M3A8QKZC", model="claude-sonnet-4-5", start_at=epoch_ms(2026, 11, 24, 9, 14, 3)
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
    for call, output in zip(batch, (INVOICES_PY, TAX_PY, GREP_ROUNDING), strict=True):
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
        "thr_01JDX8R5WN2F4T", model="claude-sonnet-4-5", start_at=epoch_ms(2026, 11, 24, 16, 2, 41)
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
    s.text_deltas(chunks("A credit note always points at a *final* invoice: it copies the", 3))
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
    s = Scene("thr_01JDYB0T6C9HMP", model="gpt-5", start_at=epoch_ms(2026, 11, 25, 10, 30, 0))
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
    s = Scene("thr_01JDYC7KQ1E5XV", model="gpt-5", start_at=epoch_ms(2026, 11, 25, 14, 5, 12))
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
        "thr_01JDZ4N8GB3YWA", model="claude-sonnet-4-5", start_at=epoch_ms(2026, 11, 26, 8, 45, 30)
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
        "thr_01JE0H6V4M8TQB", model="claude-sonnet-4-5", start_at=epoch_ms(2026, 11, 27, 22, 41, 9)
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


def restore_recovered() -> list[ev.Event]:
    """A ``kun rewind --files`` killed between its two file changes: the
    intent (``files_restore_started``) is on record with no outcome, so the
    next open hashes the files and records the rewind as the disk says
    (one file restored, one not reached); the rewind is then undone, intent
    and outcome this time, putting the restored file back."""
    s = Scene("thr_01JE2R7W4XKQ9M", model="gpt-5", start_at=epoch_ms(2026, 12, 1, 9, 12, 40))
    s.open(title="Rename the VAT helpers")
    s.turn("Say hello.")
    s.send(0)
    s.priced(0, 6_120, 9, hit=5_888)
    s.received(0)
    s.answer(1, "Hello.", 6_140, 3, hit=6_016)
    t2 = s.turn("Split the VAT helpers into their own module.")
    s.send(0)
    old_cli = BlobRef(sha256="7" * 64, size=1_204)
    points = (
        FileCheckpoint(path="src/ledger/vat.py", before=None, after_sha256="a" * 64),
        FileCheckpoint(path="src/ledger/cli.py", before=old_cli, after_sha256="b" * 64),
    )
    for point, content in zip(
        points, ("def vat(): ...\n", "from ledger.vat import vat\n"), strict=True
    ):
        call = s.call("write_file", {"path": point.path, "content": content})
        s.start_tool(call)
        s.finished(call, 12)
        output = f"Wrote {point.path}."
        s.item(_written(call, output, point, s.next_id("res")))
    s.priced(0, 7_010, 120, hit=6_144)
    s.received(0)
    s.answer(1, "Moved them to src/ledger/vat.py.", 7_200, 9, hit=7_040)
    s.wait(60_000)
    saved_vat = BlobRef(sha256="a" * 64, size=15)
    saved_cli = BlobRef(sha256="b" * 64, size=27)
    planned = (
        FileCheckpoint(path="src/ledger/vat.py", before=saved_vat, after_sha256=None),
        FileCheckpoint(path="src/ledger/cli.py", before=saved_cli, after_sha256=old_cli.sha256),
    )
    s.emit(ev.FilesRestoreStarted, before_turn_id=t2, planned=planned)
    s.wait(5_000)
    reached = ev.FileSkipped(
        path="src/ledger/cli.py",
        reason="not restored: kun stopped before it got to this file; left as it was "
        "(undo the rewind and rewind again to restore it)",
    )
    files = ev.FilesRestore(restored=planned[:1], skipped=(reached,))
    rewind = s.emit(ev.ThreadRewound, before_turn_id=t2, files=files)
    s.wait(30_000)
    back = (FileCheckpoint(path="src/ledger/vat.py", before=None, after_sha256="a" * 64),)
    s.emit(ev.FilesRestoreStarted, rewind_seq=rewind.seq, planned=back)
    s.emit(ev.ThreadRewindUndone, rewind_seq=rewind.seq, files=ev.FilesRestore(restored=back))
    return s.events


def imported_thread() -> list[ev.Event]:
    """Three turns recorded on another machine, imported here
    (``thread_imported`` after them: their checkpoints are never restored
    here), then a turn run here whose checkpoint is this machine's."""
    s = Scene("thr_01JE3F0P2MNB7V", model="gpt-5", start_at=epoch_ms(2026, 12, 1, 14, 2, 10))
    s.open(title="ledger export --since")
    _export_turns(s)
    s.wait(3_600_000)
    s.emit(ev.ThreadImported)
    s.turn("Write the changelog entry.")
    s.send(0)
    point = FileCheckpoint(path="CHANGES.md", before=None, after_sha256="c" * 64)
    call = s.call("write_file", {"path": point.path, "content": "- `--since`\n"})
    s.start_tool(call)
    s.finished(call, 9)
    s.item(_written(call, f"Wrote {point.path}.", point, s.next_id("res")))
    s.priced(0, 9_400, 40, hit=9_088)
    s.received(0)
    s.answer(1, "Added it to CHANGES.md.", 9_480, 8, hit=9_344)
    return s.events


def queued_turns() -> list[ev.Event]:
    """Two messages sent while a turn runs (``multitask`` ``enqueue``):
    each waits as ``turn_queued`` with its message (the second with an
    attachment already kept as a side file) and options; when the running
    turn completes the first starts under its own id (``turn_started``, no
    second message); the other is cancelled while it waits and never
    runs."""
    s = Scene("thr_01JE4Q7U3NW8ZD", model="gpt-5", start_at=epoch_ms(2026, 12, 5, 20, 14, 2))
    s.open(title="Nightly export job")
    s.turn("Add a --dry-run flag to `ledger export`.")
    s.send(0)
    s.wait(2_000)
    waiting = []
    for text, options in (
        ("Then document it in the README.", {"plan_mode": False}),
        ("And add this screenshot to the docs.", {"disable_user_input": True}),
    ):
        turn_id = s.next_id("turn")
        attachments: tuple[Attachment, ...] = ()
        if options.get("disable_user_input"):
            ref = BlobRef(sha256="d" * 64, size=48_213)
            attachments = (
                Attachment(name="export.png", mime_type="image/png", size_bytes=48_213, ref=ref),
            )
        message = UserMessage(id=s.next_id("msg"), text=text, attachments=attachments)
        s.emit(
            ev.TurnQueued,
            turn_id=turn_id,
            message=message,
            provider=s.provider,
            model=s.model,
            reasoning_effort="low",
            **options,
        )
        waiting.append(turn_id)
        s.wait(1_500)
    s.priced(0, 7_900, 60, hit=7_424)
    s.received(0)
    s.answer(1, "Added `--dry-run`: it prints what would be exported.", 8_020, 12, hit=7_936)
    first, second = waiting
    s.emit(ev.TurnAborted, turn_id=second, reason="cancelled")
    s.turn_id = first
    s.emit(ev.TurnStarted, turn_id=first, provider=s.provider, model=s.model)
    s.send(0)
    s.answer(0, "Documented `--dry-run` under Export in the README.", 8_200, 14, hit=7_936)
    return s.events


def agent_sdk_turns() -> list[ev.Event]:
    """Three turns on an ``agent-sdk`` provider: the first ``rebased`` (no
    checkpoint yet) streams text, reads a file with the SDK's ``Read`` and
    sets the todos through kun's bridged ``todo_write``, then commits its
    session (``delegated_checkpoint``); the second ``resumed`` that
    session; a rewind hides the second, and the third rebases (the
    session remembers a turn the log now hides). Usage is the SDK's, its
    cost the SDK's ``total_cost_usd``."""
    model = "claude-sonnet-4-5"
    s = Scene("thr_01JE4D2L8QX5ZC", model=model, start_at=epoch_ms(2026, 12, 2, 9, 30, 0))
    s.create(workspace="/home/ana/src/ledger", provider="claude", model=model, title="--json")
    session = "5f0c2a9e-8d41-4b7a-9c3e-2f6d1a7b8e90"

    def delegated(mode: str, reason: str, session_id: str | None = None) -> None:
        s.emit(
            ev.DelegatedRuntime,
            turn_id=s.turn_id,
            engine="claude-agent-sdk",
            mode=mode,
            reason=reason,
            session_id=session_id,
        )

    def sdk_call(name: str, arguments: str, call_id: str) -> ToolCall:
        call = ToolCall(
            id=s.next_id("call"),
            status="in_progress",
            call_id=call_id,
            name=name,
            arguments=msgspec.Raw(arguments.encode()),
        )
        s.emit(ev.ItemCreated, turn_id=s.turn_id, item=call)
        s.start_tool(call)
        return call

    def used(prompt: int, hit: int, completion: int, cost: float) -> None:
        usage = UsageSnapshot(
            prompt_tokens=prompt,
            completion_tokens=completion,
            cache_hit_tokens=hit,
            cache_miss_tokens=prompt - hit,
            cost_usd=cost,
        )
        s.emit(
            ev.Usage,
            turn_id=s.turn_id,
            usage=usage,
            provider="claude",
            model=model,
            price_source="agent-sdk",
        )

    def checkpoint() -> None:
        s.emit(
            ev.DelegatedCheckpoint,
            turn_id=s.turn_id,
            engine="claude-agent-sdk",
            session_id=session,
            provider="claude",
            workspace="/home/ana/src/ledger",
        )

    s.start_turn("Add a --json flag to `ledger export`.", provider="claude", model=model)
    delegated("rebased", "no session checkpoint in this thread")
    s.say("Let me read the export command first.", 2)
    read = sdk_call("Read", '{"file_path":"/home/ana/src/ledger/cli/export.py"}', "toolu_01Rd")
    s.wait(40)
    s.finish_tool(read, "1\timport click\n2\t\n3\t@click.command()\n")
    todos = sdk_call(
        "todo_write", '{"todos":[{"content":"Add --json","status":"in_progress"}]}', "toolu_01Td"
    )
    s.update(todos=(Todo(content="Add --json", status="in_progress"),))
    s.finish_tool(todos, "1 todo: 1 in progress.")
    s.say("Added `--json`: each row is one JSON object per line.", 3)
    used(18_400, 16_384, 420, 0.0193)
    checkpoint()
    s.complete("end_turn")

    second = s.start_turn("Mention it in the README.", provider="claude", model=model)
    delegated("resumed", "nothing changed since the checkpoint", session)
    s.say("Documented `--json` under Export in README.md.", 2)
    used(19_100, 18_944, 95, 0.0072)
    checkpoint()
    s.complete("end_turn")

    s.rewind(second)
    s.start_turn("Mention it in docs/export.md instead.", provider="claude", model=model)
    delegated("rebased", "the history was rewound after the checkpoint")
    s.say("Documented `--json` in docs/export.md.", 2)
    used(21_050, 0, 120, 0.0808)
    checkpoint()
    s.complete("end_turn")
    return s.events


def subagent_batch() -> list[ev.Event]:
    """A parent turn that hands two tasks to sub-agents in one step (a
    delegation batch): both calls link to their side threads
    (``subagent_started``), one sub-agent's approval is shown in the parent's
    turn (``side_thread`` set, same id) and approved there, and the answers
    come back as results in call order."""
    s = Scene(
        "thr_01JE5D2K8QX4TB", model="claude-sonnet-4-5", start_at=epoch_ms(2026, 12, 5, 23, 40, 11)
    )
    s.open(title="Release checklist")
    s.turn("Check the changelog and run the export tests, in parallel.")
    s.send(0)
    scout = s.call("delegate_task", {"task": "Summarise what CHANGELOG.md says for 2.3."})
    tests = s.call(
        "delegate_task",
        {"task": "Run pytest -q tests/test_export.py; report failures.", "agent": "runner"},
    )
    s.priced(0, 6_400, 96, hit=6_144)
    s.received(0)
    sides = ("thr_01JE5D2M1C7RWA", "thr_01JE5D2M1D0KQ3")
    for call, side, agent in ((scout, sides[0], None), (tests, sides[1], "runner")):
        s.start_tool(call)
        s.emit(
            ev.SubagentStarted,
            turn_id=s.turn_id,
            item_id=call.id,
            call_id=call.call_id,
            side_thread=side,
            agent=agent,
        )
    s.wait(2_400)
    approval = s.next_id("apr")
    s.emit(
        ev.ApprovalRequested,
        turn_id=s.turn_id,
        approval_id=approval,
        call_id="toolu_01Wq3sRunnerBash8x2",
        tool_name="bash",
        summary="bash pytest -q tests/test_export.py",
        side_thread=sides[1],
    )
    s.wait(6_000)
    s.emit(ev.ApprovalResolved, turn_id=s.turn_id, approval_id=approval, decision="approved")
    s.wait(9_000)
    s.finished(scout, 11_400)
    s.result(scout, "2.3 adds `ledger export --since` and drops Python 3.10.")
    s.finished(tests, 17_900)
    s.result(tests, "All 14 tests in tests/test_export.py pass.")
    s.answer(1, "The changelog covers `--since`; the export tests pass.", 6_900, 18, hit=6_400)
    return s.events


def _written(call: ToolCall, output: str, point: FileCheckpoint, result_id: str) -> ToolResult:
    return ToolResult(
        id=result_id, call_id=call.call_id, name=call.name, output=output, checkpoint=point
    )


THREADS: dict[str, Callable[[], list[ev.Event]]] = {
    "multi_step_tools": multi_step_tools,
    "aborted_turn": aborted_turn,
    "rewound_thread": rewound_thread,
    "rewind_undone": rewind_undone,
    "forked_thread": forked_thread,
    "orphaned_turn": orphaned_turn,
    "everything": everything,
    "restore_recovered": restore_recovered,
    "imported_thread": imported_thread,
    "queued_turns": queued_turns,
    "agent_sdk_turns": agent_sdk_turns,
    "subagent_batch": subagent_batch,
}
"""The golden threads this version writes, by file stem."""
