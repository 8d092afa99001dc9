"""The ``everything`` golden thread: every event kind at least once.

Long enough to live apart from the other threads in ``golden_threads``, which
registers it. Pure: no file IO, no clock, no randomness.
"""

from __future__ import annotations

import msgspec

from kun.contracts import events as ev
from kun.contracts.items import ErrorItem, Plan, ToolCall
from kun.contracts.threads import Goal, Todo
from kun.testing.scene import Scene, chunks, epoch_ms, fork_scene


def _everything_source() -> Scene:
    s = Scene(
        "thr_01JE1A2B3C4D5E", model="claude-sonnet-4-5", start_at=epoch_ms(2026, 11, 28, 9, 0, 0)
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
    s.text_deltas(chunks("Sure, `--until` mirrors", 2))
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
