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
from typing import TYPE_CHECKING, Any, TypeVar

import click

from kun.cli.options import home_option, pasteable, store_option
from kun.cli.reading import on_kun, with_kun_if
from kun.domain.shown import shown as safe_text
from kun.domain.shown import shown_cell
from kun.domain.transcript import plural

__all__ = ["fork", "reconcile", "rewind", "threads", "usage"]

if TYPE_CHECKING:
    from kun.app.answers import ThreadUsage
    from kun.app.interface import Kun
    from kun.app.listing import ThreadSummary

F = TypeVar("F", bound=Callable[..., Any])

EXIT_FAILURE = 1
TITLE_WIDTH = 40
PAGE = 500


def _json_option(what: str) -> Callable[[F], F]:
    def decorate(func: F) -> F:
        return click.option("--json", "as_json", is_flag=True, help=f"Print {what} as JSON.")(func)

    return decorate


@click.command()
@click.option("--here", is_flag=True, help="Only the threads of this folder (their workspace).")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Show at most N threads.")
@click.option("--all", "show_all", is_flag=True, help="Include hidden side threads.")
@_json_option("the list")
@home_option
@store_option
def threads(
    here: bool, limit: int | None, show_all: bool, as_json: bool, home: Path | None
) -> None:
    """List threads, newest activity first: title, workspace, model, status,
    turns, last activity (local time), tokens and cost."""
    from kun.app.listing import to_json

    where = str(Path.cwd().resolve()) if here else None
    wide = _terminal_width() is not None and not as_json

    async def body(kun: Kun) -> tuple[list[ThreadSummary], str | None, list[str]]:
        found, home_shown = await _listed(kun, where, limit, include_hidden=show_all)
        known = [s.thread_id for s in found]
        if wide and found and not show_all:
            everything, _ = await _listed(kun, None, None, include_hidden=True)
            known = [s.thread_id for s in everything]
        return found, home_shown, known

    found, home_shown, known = on_kun(home, body)
    if as_json:
        click.echo(to_json(found).decode())
    elif not found:
        under = f" under {home_shown}" if home_shown is not None else ""
        click.echo(f"no threads{under}" + (f" for {where}" if where else ""))
    else:
        click.echo("\n".join(_table(found, known)))


async def _listed(
    kun: Kun, where: str | None, limit: int | None, *, include_hidden: bool
) -> tuple[list[ThreadSummary], str | None]:
    """The threads (of the workspace ``where``), newest activity first, at
    most ``limit``, read a page at a time; and the home they are under."""
    found: list[ThreadSummary] = []
    cursor: str | None = None
    while True:
        page = await kun.threads(limit=PAGE, cursor=cursor, include_hidden=include_hidden)
        found += (s for s in page.threads if where is None or s.workspace == where)
        cursor = page.next_cursor
        if cursor is None or (limit is not None and len(found) >= limit):
            return found[:limit], page.home


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
@store_option
def usage(threads: tuple[str, ...], as_json: bool, home: Path | None) -> None:
    """Usage and cost of THREAD, or of two threads side by side with deltas.

    Sums the usage events only, skipping (and counting) lines it cannot read.
    THREAD is a thread id, or the path of an events.jsonl file (read here).
    """
    import msgspec

    from kun.app.logfile import LogFile, log_file

    if len(threads) > 2:
        raise click.UsageError("give one thread, or two to compare")
    files = {thread: log_file(thread) for thread in threads}

    async def body(kun: Kun | None) -> list[ThreadUsage]:
        found = []
        for thread in threads:
            path = files[thread]
            if path is not None:
                found.append(await LogFile(thread, path).usage())
            else:
                assert kun is not None
                found += (await kun.usage(thread)).threads
        return found

    found = with_kun_if(home, any(path is None for path in files.values()), body)
    for shown in found:
        for note in shown.notes:
            click.echo(safe_text(f"note: {shown.thread_id}: {note}"), err=True)
    if as_json:
        plain = [msgspec.structs.replace(u, notes=()) for u in found]
        click.echo(msgspec.json.encode({"threads": plain}).decode())
    else:
        click.echo(safe_text(_usage_table(found)))


def _usage_table(found: list[ThreadUsage]) -> str:
    """One thread's usage, or two side by side (``A:``, ``B:``) with deltas."""
    from kun.domain.usage_report import render_usage, subagent_line

    two = len(found) == 2
    names = zip("AB", found, strict=False)
    labels = [f"{name}: {u.thread_id}" if two else u.thread_id for name, u in names]
    lines = render_usage(labels, [u.usage for u in found])
    lines += [subagent_line(u.thread_id, u.subagents) for u in found if u.subagents is not None]
    return "\n".join(lines)


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
    from kun.app.drawing import restore_lines

    if turn is not None and before_turn is not None:
        raise click.UsageError("give the turn once: TURN or --before-turn")
    ref = before_turn or turn
    if undo == (ref is not None):
        raise click.UsageError("give --before-turn N (or a turn id), or --undo")
    if ref is None:
        undone = on_kun(home, lambda kun: kun.undo_rewind(thread))
        click.echo(undone_line(undone.thread_id, undone.restored, undone.rewind_seq))
        _echo_lines(restore_lines(undone.files, undo=True))
        return
    done = on_kun(home, lambda kun: kun.rewind(thread, ref, files=files))
    click.echo(rewound_line(done.thread_id, done.turn_number, done.turn_id, done.hidden, done.seq))
    _echo_lines(restore_lines(done.files))


def rewound_line(thread_id: str, number: int, turn_id: str, hidden: int, seq: int) -> str:
    """What ``kun rewind`` says it did: exactly which turns are hidden now."""
    from kun.domain.turnref import hidden_span

    return (
        f"rewound {thread_id}: hid {hidden_span(number, hidden)} "
        f"(turn {number} is {turn_id}; the rewind is seq {seq}); "
        f"{pasteable('rewind', thread_id, '--undo')} brings them back"
    )


def undone_line(thread_id: str, restored: int, rewind_seq: int) -> str:
    """What ``kun rewind --undo`` says it did."""
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
    import msgspec

    if at_turn is not None and at_seq is not None:
        raise click.UsageError("give --at-turn or --at-seq, not both")
    turn = None if at_turn is None else str(at_turn)
    forked = on_kun(home, lambda kun: kun.fork(thread, at_seq=at_seq, at_turn=turn))
    if forked.cut is not None:
        click.echo(f"kun: note: {forked.cut}", err=True)
    if as_json:
        click.echo(msgspec.json.encode(msgspec.structs.replace(forked, cut=None)).decode())
    else:
        click.echo(forked.thread_id)


@click.command()
@_json_option("what was settled and skipped")
@home_option
def reconcile(as_json: bool, home: Path | None) -> None:
    """Settle turns left running by a process that died (code 'orphaned').

    A thread that cannot be read or settled is skipped and named on stderr,
    the others are settled, and the exit status is 1.
    """
    import msgspec

    done = on_kun(home, lambda kun: kun.reconcile())
    if as_json:
        click.echo(msgspec.json.encode(done).decode())
    else:
        click.echo("\n".join(done.reconciled) if done.reconciled else "nothing to reconcile")
    for thread_id, reason in done.skipped.items():
        click.echo(f"note: not reconciled {thread_id}: {reason}", err=True)
    if done.skipped:
        sys.exit(EXIT_FAILURE)
