"""Usage totals read straight from a log, for comparing threads.

Only ``usage`` events are summed, and lines that cannot be read are skipped
and counted rather than fatal: a usage comparison of a damaged log should
still say what it could read, and how much it could not. A line whose seq
repeats an earlier one (a duplicated usage line) is counted once, and a gap
in the seqs is reported: either means the totals may be wrong.
"""

from __future__ import annotations

from pathlib import Path

from kun.contracts.usage import UsageTotals
from kun.domain.usage import sum_usage_events
from kun.store.port import ReadReport
from kun.store.reader import read_log

__all__ = ["skipped_lines", "sum_usage_log", "usage_of_log"]


def usage_of_log(path: Path) -> tuple[UsageTotals, ReadReport]:
    """The usage totals of the log at ``path``, and what the read met
    (``repeated_seqs`` includes repeats the reader passed on)."""
    report = ReadReport()
    total, repeated = sum_usage_events(read_log(path, mode="skip_bad", report=report))
    report.repeated_seqs += repeated
    return total, report


def skipped_lines(report: ReadReport) -> int:
    """Lines left out of the totals: bad lines, unknown kinds, repeated seqs,
    a torn tail."""
    torn = report.torn_tail is not None
    return report.skipped_bad + report.unknown + report.repeated_seqs + torn


def sum_usage_log(path: Path) -> tuple[UsageTotals, int]:
    """The usage totals of the log at ``path`` and how many lines were
    skipped (see :func:`skipped_lines`)."""
    total, report = usage_of_log(path)
    return total, skipped_lines(report)
