"""Usage totals read straight from a log, for comparing threads.

Only ``usage`` events are summed, and lines that cannot be read are skipped
and counted rather than fatal: a usage comparison of a damaged log should
still say what it could read, and how much it could not.
"""

from __future__ import annotations

from pathlib import Path

from kun.contracts.events import Usage
from kun.contracts.usage import UsageTotals
from kun.domain.usage import add_usage
from kun.store.port import ReadReport
from kun.store.reader import read_log


def sum_usage_log(path: Path) -> tuple[UsageTotals, int]:
    """The usage totals of the log at ``path`` and how many lines were skipped
    (bad lines, unknown kinds, a torn tail)."""
    report = ReadReport()
    total = UsageTotals()
    for event in read_log(path, mode="skip_bad", report=report):
        if type(event) is Usage:
            total = add_usage(total, event.usage)
    skipped = report.skipped_bad + report.unknown + (report.torn_tail is not None)
    return total, skipped
