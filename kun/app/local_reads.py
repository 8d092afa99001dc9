"""What the in-process adapter reads from a thread's log file, off the
event loop: a page of the thread list, the usage report (one thread, or
two side by side, as ``kun usage`` prints it) and the transcript (``kun
replay``'s text)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from kun.app.answers import ThreadPage, ThreadUsage, UsageReport
from kun.app.listing import ThreadSummary, list_threads
from kun.app.local_errors import InvalidCursor
from kun.contracts.usage import UsageTotals
from kun.domain.transcript import plural, render_transcript
from kun.domain.usage import add_totals
from kun.domain.usage_report import render_usage, subagent_line
from kun.store.port import ReadReport
from kun.store.replay import replay_log
from kun.store.usage_totals import skipped_lines, subagent_usage, usage_of_log

__all__ = [
    "DEFAULT_PAGE",
    "page_of",
    "thread_page",
    "transcript_text",
    "usage_notes",
    "usage_report",
]

DEFAULT_PAGE = 50


def thread_page(
    home: Path,
    *,
    limit: int | None,
    cursor: str | None,
    include_hidden: bool,
    query: str | None = None,
) -> ThreadPage:
    """The threads after ``cursor`` (the ``next_cursor`` of the page
    before), newest activity first, ``limit`` of them (``None``: all);
    ``query``: only those whose title, workspace or id contains it,
    ignoring case."""
    found = list_threads(home, include_hidden=include_hidden, include_unreadable=True)
    return page_of(found, limit=limit, cursor=cursor, query=query, where=str(home))


def page_of(
    found: list[ThreadSummary],
    *,
    limit: int | None,
    cursor: str | None,
    query: str | None,
    where: str,
) -> ThreadPage:
    """The page of ``found`` (newest activity first) after ``cursor``, as
    :func:`thread_page` says; ``where``: the home or database listed."""
    after = _cursor(cursor)
    needle = (query or "").strip().casefold()
    if needle:
        found = [s for s in found if _matches(s, needle)]
    if after is not None:
        found = [s for s in found if (s.updated_at, s.thread_id) < after]
    page = found if limit is None else found[:limit]
    more = len(found) > len(page)
    cursor_next = _cursor_of(page[-1]) if more and page else None
    return ThreadPage(threads=page, next_cursor=cursor_next, home=where)


def _matches(summary: ThreadSummary, needle: str) -> bool:
    return any(
        needle in text.casefold() for text in (summary.title, summary.workspace, summary.thread_id)
    )


def _cursor_of(summary: ThreadSummary) -> str:
    return f"{summary.updated_at}.{summary.thread_id}"


def _cursor(text: str | None) -> tuple[int, str] | None:
    if text is None:
        return None
    at, _, thread_id = text.partition(".")
    if not at.isdecimal() or not thread_id:
        raise InvalidCursor("cursor is not a next_cursor of this API")
    return int(at), thread_id


def usage_report(logs: list[tuple[str, Path]]) -> UsageReport:
    """``kun usage --json``'s document for one or two logs, plus ``text``:
    the table ``kun usage`` prints."""
    totals: list[UsageTotals] = []
    labels: list[str] = []
    shown: list[ThreadUsage] = []
    for name, (thread_id, path) in zip("AB", logs, strict=False):
        side: list[str] = []
        total, report = usage_of_log(path, side)
        subs = subagent_usage(path, side) if side else None
        notes = list(usage_notes(report))
        if subs is not None:
            total = add_totals(total, subs.usage)
            if subs.missing:
                notes.append(f"{plural(subs.missing, 'side thread')} of its sub-agents not here")
        totals.append(total)
        labels.append(f"{name}: {thread_id}" if len(logs) == 2 else thread_id)
        priced = not (total.calls and total.unpriced_calls == total.calls)
        shown.append(
            ThreadUsage(
                thread_id=thread_id,
                usage=total,
                cost_usd=total.cost_usd if priced else None,
                skipped_lines=skipped_lines(report),
                notes=tuple(notes),
                subagents=subs.usage if subs is not None else None,
            )
        )
    lines = render_usage(labels, totals)
    lines += [subagent_line(u.thread_id, u.subagents) for u in shown if u.subagents is not None]
    return UsageReport(threads=shown, text="\n".join(lines))


def usage_notes(report: ReadReport) -> Iterator[str]:
    """What reading the log skipped or found missing, a line each."""
    unreadable = report.skipped_bad + report.unknown + (report.torn_tail is not None)
    if unreadable:
        yield f"skipped {plural(unreadable, 'unreadable line')}"
    if report.repeated_seqs:
        yield (
            f"skipped {plural(report.repeated_seqs, 'line')} that repeated an earlier seq "
            "(each event is counted once)"
        )
    if report.seq_gaps and report.first_gap is not None:
        yield (
            f"{plural(report.missing_seqs, 'event')} missing (the seqs jump "
            f"{plural(report.seq_gaps, 'time')}, first from seq {report.first_gap[0]} "
            f"to {report.first_gap[1]}); "
            "the totals may be short"
        )


def transcript_text(path: Path, *, hidden: bool, reasoning: bool, until_seq: int | None) -> str:
    """``kun replay``'s text of the log at ``path`` (unreadable lines skipped)."""
    state = replay_log(path, until=until_seq, mode="tolerant")
    return "\n".join(render_transcript(state, show_hidden=hidden, show_reasoning=reasoning))
