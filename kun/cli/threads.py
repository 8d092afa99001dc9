"""The commands that list and reshape threads: ``kun threads``, ``usage``,
``rewind``, ``fork`` and ``reconcile``, registered by :mod:`kun.cli`.

``--json`` prints one JSON document on stdout (notes stay on stderr), in a
shape that only grows:

* ``threads``: an array of thread summaries (:mod:`kun.app.listing`);
* ``usage``: ``{"threads": [{"thread_id", "usage", "cost_usd", "skipped_lines"}]}``
  (``cost_usd`` is ``null`` when no call had a price);
* ``fork``: ``{"thread_id", "source_thread_id", "source_seq"}``;
* ``reconcile``: ``{"reconciled": [ids], "skipped": {id: reason}}``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import click

from kun.cli.options import home_option, log_of, pasteable, service_call
from kun.cli.remote import local_only, remote_target
from kun.domain.shown import shown as safe_text
from kun.domain.shown import shown_cell
from kun.domain.transcript import plural

__all__ = ["fork", "reconcile", "rewind", "threads", "usage"]

F = TypeVar("F", bound=Callable[..., Any])

EXIT_FAILURE = 1
TITLE_WIDTH = 40


def _json_option(what: str) -> Callable[[F], F]:
    def decorate(func: F) -> F:
        return click.option("--json", "as_json", is_flag=True, help=f"Print {what} as JSON.")(func)

    return decorate


def _echo_json(value: Any) -> None:
    import msgspec

    click.echo(msgspec.json.encode(value).decode())


@click.command()
@click.option("--here", is_flag=True, help="Only the threads of this folder (their workspace).")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Show at most N threads.")
@click.option("--all", "show_all", is_flag=True, help="Include hidden side threads.")
@_json_option("the list")
@home_option
def threads(
    here: bool, limit: int | None, show_all: bool, as_json: bool, home: Path | None
) -> None:
    """List threads, newest activity first: title, workspace, model, status,
    turns, last activity (local time), tokens and cost."""
    from kun.app.listing import list_threads, to_json
    from kun.store.paths import resolve_home

    remote = remote_target()
    if remote is not None:
        from kun.cli.remote_reads import remote_threads

        local_only(home=home)
        remote_threads(remote, here=here, limit=limit, show_all=show_all, as_json=as_json)
        return
    root = resolve_home(home)
    found = list_threads(
        root,
        workspace=Path.cwd() if here else None,
        limit=limit,
        include_hidden=show_all,
        include_unreadable=True,
    )
    if as_json:
        click.echo(to_json(found).decode())
    elif not found:
        where = f" for {Path.cwd().resolve()}" if here else ""
        click.echo(f"no threads under {root}{where}")
    else:
        from kun.app.lookup import thread_ids

        click.echo("\n".join(_table(found, thread_ids(root))))


def _rows(found: list[Any]) -> Iterator[tuple[str, ...]]:
    from kun.app.listing import format_cost, format_when, format_workspace

    yield ("THREAD", "TITLE", "WORKSPACE", "MODEL", "STATUS", "TURNS", "LAST ACTIVITY", "TOKENS",
           "COST")  # fmt: skip
    for s in found:
        if s.error is not None:
            yield (s.thread_id, f"(unreadable: {s.error})")
            continue
        usage = s.usage
        yield (
            s.thread_id,
            _cut(s.title, TITLE_WIDTH),
            format_workspace(s.workspace),
            "/".join(p for p in (s.provider, s.model) if p) or "-",
            s.status,
            str(s.turns),
            format_when(s.updated_at),
            f"{usage.prompt_tokens + usage.completion_tokens:,}",
            format_cost(usage),
        )


def _columns() -> tuple[Any, ...]:
    from kun.cli.fit import Column

    return (
        Column("THREAD"),
        Column("TITLE", flex=True, least=12),
        Column("WORKSPACE", flex=True, least=12, left=True, drop=3),
        Column("MODEL", flex=True, least=10, drop=2),
        Column("STATUS"),
        Column("TURNS", drop=6),
        Column("LAST ACTIVITY", drop=4),
        Column("TOKENS", drop=1),
        Column("COST", drop=5),
    )


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _table(found: list[Any], known: list[str]) -> list[str]:
    """The rows, fitted to the terminal's width when stdout is one
    (:mod:`kun.cli.fit`; ids cut to a prefix unique among ``known``);
    piped, every column in full, as before."""
    from kun.app.lookup import unique_prefix_length
    from kun.cli.fit import fit_rows, render

    rows = [tuple(map(shown_cell, row)) for row in _rows(found)]
    width = _terminal_width()
    if width is not None:
        shortest = unique_prefix_length(known, [s.thread_id for s in found])
        rows = fit_rows(rows, _columns(), width, id_least=shortest)
    return render(rows)


def _terminal_width() -> int | None:
    import shutil

    return shutil.get_terminal_size().columns if sys.stdout.isatty() else None


@click.command()
@click.argument("threads", nargs=-1, required=True)
@_json_option("the totals")
@home_option
def usage(threads: tuple[str, ...], as_json: bool, home: Path | None) -> None:
    """Usage and cost of THREAD, or of two threads side by side with deltas.

    Sums the usage events only, skipping (and counting) lines it cannot read.
    """
    from kun.domain.usage_report import render_usage
    from kun.store.usage_totals import skipped_lines, usage_of_log

    if len(threads) > 2:
        raise click.UsageError("give one thread, or two to compare")
    remote = remote_target()
    if remote is not None:
        from kun.cli.remote_reads import remote_usage

        local_only(home=home)
        remote_usage(remote, threads, as_json=as_json)
        return
    totals, labels, shown = [], [], []
    for name, thread in zip("AB", threads, strict=False):
        thread_id, path = log_of(home, thread)
        total, report = usage_of_log(path)
        totals.append(total)
        labels.append(f"{name}: {thread_id}" if len(threads) == 2 else thread_id)
        priced = not (total.calls and total.unpriced_calls == total.calls)
        shown.append(
            {
                "thread_id": thread_id,
                "usage": total,
                "cost_usd": total.cost_usd if priced else None,
                "skipped_lines": skipped_lines(report),
            }
        )
        for note in _usage_notes(report):
            click.echo(f"note: {thread_id}: {note}", err=True)
    if as_json:
        _echo_json({"threads": shown})
    else:
        click.echo(safe_text("\n".join(render_usage(labels, totals))))


def _usage_notes(report: Any) -> Iterator[str]:
    unreadable = report.skipped_bad + report.unknown + (report.torn_tail is not None)
    if unreadable:
        yield f"skipped {plural(unreadable, 'unreadable line')}"
    if report.repeated_seqs:
        yield (
            f"skipped {plural(report.repeated_seqs, 'line')} that repeated an earlier seq "
            "(each event is counted once)"
        )
    if report.seq_gaps:
        yield (
            f"{plural(report.missing_seqs, 'event')} missing (the seqs jump "
            f"{plural(report.seq_gaps, 'time')}, first from seq {report.first_gap[0]} "
            f"to {report.first_gap[1]}); "
            "the totals may be short"
        )


@click.command()
@click.argument("thread")
@click.argument("turn", required=False)
@click.option(
    "--before-turn",
    "before_turn",
    default=None,
    help="The first turn to hide: its number as kun replay shows it, or its id.",
)
@click.option(
    "--files",
    is_flag=True,
    help="Also put the workspace's files back as they were before that turn "
    "(only changes made by write_file/edit_file; files changed since are left alone).",
)
@click.option("--undo", is_flag=True, help="Bring back what the latest rewind hid.")
@home_option
def rewind(
    thread: str,
    turn: str | None,
    before_turn: str | None,
    files: bool,
    undo: bool,
    home: Path | None,
) -> None:
    """Hide TURN (or --before-turn) of THREAD and every later turn, or --undo
    the latest rewind (nothing is deleted; the log records both). With
    --files, the files kun's tools changed go back too; --undo puts them back."""
    from kun.app.threadops import rewind_before, undo_latest_rewind
    from kun.runtime.checkpoints import describe_restore

    if turn is not None and before_turn is not None:
        raise click.UsageError("give the turn once: TURN or --before-turn")
    before_turn = before_turn or turn
    if undo == (before_turn is not None):
        raise click.UsageError("give --before-turn N (or a turn id), or --undo")
    remote = remote_target()
    if remote is not None:
        from kun.cli.remote_threads import remote_rewind

        local_only(home=home)
        remote_rewind(remote, thread, before_turn, files=files)
        return
    thread_id, _ = log_of(home, thread)
    if undo:
        done = service_call(home, lambda s: undo_latest_rewind(s, thread_id))
        click.echo(undone_line(thread_id, len(done.hidden_turn_ids), done.seq))
        _echo_lines(describe_restore(done.undo_files, undo=True))
        return
    assert before_turn is not None
    ref = before_turn
    result = service_call(home, lambda s: rewind_before(s, thread_id, ref, files=files))
    click.echo(
        rewound_line(thread_id, result.number, result.turn.turn_id, result.hidden, result.seq)
    )
    _echo_lines(describe_restore(result.files))


def rewound_line(thread_id: str, number: int, turn_id: str, hidden: int, seq: int) -> str:
    """What ``kun rewind`` says it did, locally or over a server: exactly
    which turns are hidden now."""
    from kun.domain.turnref import hidden_span

    return (
        f"rewound {thread_id}: hid {hidden_span(number, hidden)} "
        f"(turn {number} is {turn_id}; the rewind is seq {seq}); "
        f"{pasteable('rewind', thread_id, '--undo')} brings them back"
    )


def undone_line(thread_id: str, restored: int, rewind_seq: int) -> str:
    """What ``kun rewind --undo`` says it did, locally or over a server."""
    return (
        f"brought back {plural(restored, 'turn')} of {thread_id} (the rewind at seq {rewind_seq})"
    )


def _echo_lines(lines: list[str]) -> None:
    """A restored file's path came from the log (an imported one too)."""
    for line in lines:
        click.echo(shown_cell(line))


@click.command()
@click.argument("thread")
@click.option(
    "--at-turn",
    type=click.IntRange(min=1),
    default=None,
    help="Keep turns 1..N (numbered as kun replay shows them).",
)
@click.option(
    "--at-seq", type=click.IntRange(min=1), default=None, help="Fork point (default: now)."
)
@_json_option("the new thread")
@home_option
def fork(
    thread: str, at_turn: int | None, at_seq: int | None, as_json: bool, home: Path | None
) -> None:
    """Start a new thread whose history is THREAD's (all of it, its turns
    1..--at-turn, or its log up to --at-seq); prints the new thread's id.
    An --at-seq inside a turn keeps that turn up to there and ends it as
    aborted (forked); a note on stderr says so."""
    from kun.app.threadops import fork_noting_cut

    if at_turn is not None and at_seq is not None:
        raise click.UsageError("give --at-turn or --at-seq, not both")
    remote = remote_target()
    if remote is not None:
        from kun.cli.remote_threads import remote_fork

        local_only(home=home)
        new, thread_id, seq = remote_fork(remote, thread, at_seq=at_seq, at_turn=at_turn)
    else:
        thread_id, _ = log_of(home, thread)
        new, seq, cut = service_call(
            home, lambda s: fork_noting_cut(s, thread_id, at_seq=at_seq, at_turn=at_turn)
        )
        if cut is not None:
            click.echo(f"kun: note: {cut}", err=True)
    if as_json:
        _echo_json({"thread_id": new, "source_thread_id": thread_id, "source_seq": seq})
    else:
        click.echo(new)


@click.command()
@_json_option("what was settled and skipped")
@home_option
def reconcile(as_json: bool, home: Path | None) -> None:
    """Settle turns left running by a process that died (code 'orphaned').

    A thread that cannot be read or settled is skipped and named on stderr,
    the others are settled, and the exit status is 1.
    """
    from kun.runtime.reconcile import reconcile_orphaned_turns

    skipped: dict[str, str] = {}
    touched = service_call(home, lambda s: reconcile_orphaned_turns(s, skipped=skipped))
    if as_json:
        _echo_json({"reconciled": touched, "skipped": skipped})
    else:
        click.echo("\n".join(touched) if touched else "nothing to reconcile")
    for thread_id, reason in skipped.items():
        click.echo(f"note: not reconciled {thread_id}: {reason}", err=True)
    if skipped:
        sys.exit(EXIT_FAILURE)
