"""A thread's usage as ``kun usage`` shows it, read from its log: the
totals, the cost (``None`` when no call had a price), and a note for each
thing the read skipped or found missing (:meth:`kun.app.interface.Kun.usage`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kun.app.answers import ThreadUsage, UsageReport
from kun.domain.transcript import plural

__all__ = ["thread_usage", "usage_report", "usage_text"]


def thread_usage(thread_id: str, path: Path) -> ThreadUsage:
    """The usage events of the log at ``path`` summed, skipping (and
    counting) the lines that cannot be read."""
    from kun.store.usage_totals import skipped_lines, usage_of_log

    total, report = usage_of_log(path)
    priced = not (total.calls and total.unpriced_calls == total.calls)
    return ThreadUsage(
        thread_id=thread_id,
        usage=total,
        cost_usd=total.cost_usd if priced else None,
        skipped_lines=skipped_lines(report),
        notes=list(_notes(report)),
    )


def usage_text(found: list[ThreadUsage]) -> str:
    """The table ``kun usage`` prints: one thread, or two side by side
    (labelled ``A:`` and ``B:``) with deltas."""
    from kun.domain.usage_report import render_usage

    two = len(found) == 2
    labels = [
        f"{name}: {u.thread_id}" if two else u.thread_id
        for name, u in zip("AB", found, strict=False)
    ]
    return "\n".join(render_usage(labels, [u.usage for u in found]))


def usage_report(logs: list[tuple[str, Path]]) -> UsageReport:
    """:func:`thread_usage` of one or two logs, with :func:`usage_text`."""
    found = [thread_usage(thread_id, path) for thread_id, path in logs]
    return UsageReport(threads=found, text=usage_text(found))


def _notes(report: Any) -> Iterator[str]:
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
