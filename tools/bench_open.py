"""Benchmark opening a long thread to continue it, with and without a snapshot.

    python tools/bench_open.py [--events 1000000] [--tail 10000] [--runs 3] [--dir DIR]

Builds one thread of ``--events`` events with ``tools/bench_log.py``'s
generator, then times ``EventRecorder.open`` on a ``JsonlEventStore`` in a
fresh process per run (median of ``--runs``), and that process's peak RSS
(``VmHWM``: Linux keeps ``ru_maxrss`` across ``exec``, so a child would
report its parent's peak) above a process that only imports the same
modules (issue 10, item 3):

- no snapshot: the whole log is folded;
- snapshot at the end: what a clean exit leaves (the tail is empty);
- snapshot ``--tail`` events before the end: a thread that grew since.

Ratios are to the no-snapshot open, measured in this one run. Each run checks
that the opened state equals the full replay's last seq.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_log import THREAD, generate

from kun.domain.reduce import Projector
from kun.store.paths import log_path
from kun.store.reader import read_log
from kun.store.snapshot import snapshot_path, write_snapshot

_CHILD = """
import resource, sys, time
from pathlib import Path
import anyio
from kun.runtime.recorder import EventRecorder
from kun.store.jsonl import JsonlEventStore

def peak_kb() -> int:
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

async def main(home: str, expect: int) -> None:
    async with JsonlEventStore(Path(home)) as store:
        async with EventRecorder(store, snapshot_after=10**12) as recorder:
            start = time.perf_counter()
            state = await recorder.open(sys.argv[3])
            took = time.perf_counter() - start
    assert state.last_seq == expect, (state.last_seq, expect)
    print(took, peak_kb())

if sys.argv[1] == "-":
    print(0.0, peak_kb())
else:
    anyio.run(main, sys.argv[1], int(sys.argv[2]))
"""


def _run(home: Path | None, expect: int) -> tuple[float, float]:
    """Seconds to open, peak RSS in MB of a fresh process."""
    argv = [sys.executable, "-c", _CHILD, str(home) if home else "-", str(expect), THREAD]
    out = subprocess.run(argv, check=True, capture_output=True, text=True).stdout.split()
    return float(out[0]), int(out[1]) / 1024


def _measure(home: Path, expect: int, runs: int) -> tuple[float, float]:
    results = [_run(home, expect) for _ in range(runs)]
    return statistics.median(t for t, _ in results), max(m for _, m in results)


def _snapshot_at(log: Path, path: Path, seq: int) -> None:
    """Snapshot the fold up to ``seq``, at the byte offset after its line."""
    projector = Projector()
    projector.apply_all(read_log(log, until=seq))
    offset = 0
    with log.open("rb") as f:
        for _ in range(seq):
            offset += len(f.readline())
    if not write_snapshot(path, log, projector.snapshot(), offset):
        raise SystemExit(f"could not snapshot at seq {seq}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--tail", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=None, help="where to write (default: tmp)")
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="kun-bench-open-", dir=args.dir))
    try:
        log = log_path(home, THREAD)
        log.parent.mkdir(parents=True)
        count = generate(log, args.events)
        print(f"log: {count:,} events, {log.stat().st_size / 1e6:,.0f} MB", flush=True)
        _, base_mb = _run(None, 0)
        rows: list[tuple[str, float, float]] = []
        full_s, full_mb = _measure(home, count, args.runs)
        rows.append(("no snapshot (full fold)", full_s, full_mb))
        snap = snapshot_path(home, THREAD)
        _snapshot_at(log, snap, count)
        print(f"snapshot: {snap.stat().st_size / 1e6:,.0f} MB", flush=True)
        rows.append(("snapshot at the end", *_measure(home, count, args.runs)))
        _snapshot_at(log, snap, count - args.tail)
        rows.append((f"snapshot + {args.tail:,}-event tail", *_measure(home, count, args.runs)))
        print(
            f"{'open ' + format(count, ',') + ' events':<34} {'time':>9} {'ratio':>6} "
            f"{'peak RSS':>11} {'ratio':>6}  (RSS above a bare import: {base_mb:,.0f} MB)"
        )
        for name, took, peak in rows:
            print(
                f"{name:<34} {took * 1e3:7,.0f} ms {took / full_s:6.2f} "
                f"{peak - base_mb:8,.0f} MB {(peak - base_mb) / (full_mb - base_mb):6.2f}"
            )
    finally:
        shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
