"""Compare the usage of two threads, straight from their events.jsonl files.

    python tools/transcript_diff.py A/events.jsonl B/events.jsonl

Only ``usage`` events are summed. Lines that cannot be read (corrupt, unknown
kinds, a torn tail) are skipped and counted, so a damaged log still compares.
Exit status: 0, or 2 when a file cannot be opened.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kun.domain.usage_report import render_usage
from kun.store.usage_totals import sum_usage_log


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("a", type=Path, help="events.jsonl of thread A")
    parser.add_argument("b", type=Path, help="events.jsonl of thread B")
    args = parser.parse_args(argv)
    totals = []
    for label, path in (("A", args.a), ("B", args.b)):
        try:
            total, skipped = sum_usage_log(path)
        except OSError as exc:
            print(f"transcript_diff: cannot read {path}: {exc.strerror}", file=sys.stderr)
            return 2
        totals.append(total)
        print(f"{label}: {path} ({skipped} unreadable lines skipped)")
    print()
    print("\n".join(render_usage(["A", "B"], totals)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
