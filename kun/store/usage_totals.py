"""Usage totals read straight from a log, for comparing threads.

Only ``usage`` events are summed, and lines that cannot be read are skipped
and counted rather than fatal: a usage comparison of a damaged log should
still say what it could read, and how much it could not. A line whose seq
repeats an earlier one (a duplicated usage line) is counted once, and a gap
in the seqs is reported: either means the totals may be wrong.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kun.contracts.usage import UsageTotals
from kun.domain.usage import add_totals, sum_usage_events
from kun.store.port import ReadReport
from kun.store.reader import read_log

__all__ = ["SubagentUsage", "skipped_lines", "subagent_usage", "sum_usage_log", "usage_of_log"]

_MAX_DEPTH = 8


def usage_of_log(
    path: Path, side_threads: list[str] | None = None
) -> tuple[UsageTotals, ReadReport]:
    """The usage totals of the log at ``path``, and what the read met
    (``repeated_seqs`` includes repeats the reader passed on);
    ``side_threads`` gets the ids of its sub-agents' side threads."""
    report = ReadReport()
    events = read_log(path, mode="skip_bad", report=report)
    total, repeated = sum_usage_events(events, side_threads)
    report.repeated_seqs += repeated
    return total, report


@dataclass(frozen=True)
class SubagentUsage:
    """What a thread's sub-agents spent (their side threads', and theirs'
    in turn): ``threads`` side threads, ``missing`` of them with no log here."""

    usage: UsageTotals
    threads: int
    missing: int


def subagent_usage(path: Path, side_threads: list[str], depth: int = 0) -> SubagentUsage:
    """The usage of ``side_threads``, read from their logs beside ``path``
    (a home's ``threads/<id>/events.jsonl``)."""
    total, count, missing = UsageTotals(), 0, 0
    for child in side_threads:
        log = path.parent.parent / child / path.name
        if not log.is_file():
            missing += 1
            continue
        grandchildren: list[str] = []
        own, _ = usage_of_log(log, grandchildren)
        total, count = add_totals(total, own), count + 1
        if grandchildren and depth < _MAX_DEPTH:
            deeper = subagent_usage(log, grandchildren, depth + 1)
            total = add_totals(total, deeper.usage)
            count, missing = count + deeper.threads, missing + deeper.missing
    return SubagentUsage(total, count, missing)


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
