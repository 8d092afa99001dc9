"""Benchmark ``kun threads`` against baselines measured in the same run.

    python tools/bench_threads.py [--counts 10,1000,10000] [--runs 5] [--big 200000]

For each count of threads (small logs written with kun's LogBuilder; the
largest home also holds one thread of ``--big`` events), prints
the wall time of a ``kun threads`` process:

- cold: the thread index deleted first, so every log is replayed (what every
  listing cost before the index existed) and the index is written;
- warm: the index is current, so each log costs one ``stat``;

each beside two baselines: ``python -c "import msgspec, click"`` (the floor
of any Python CLI built on them) and ``kun threads`` on an empty home (kun's
own start-up), as ratios. Target: warm at 10,000 threads within 0.2 s of
kun's start-up (the listing's own cost, shown as ``listing``), which is the
issue's "< 0.2 s for 10,000 threads" with start-up measured separately.
Medians of ``--runs``; cold runs are fewer at large counts.

Exit status 1 if the target is missed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import msgspec

from kun.app.thread_index import index_path
from kun.testing.logbuilder import LogBuilder

TARGET_S = 0.2
_encode = msgspec.json.Encoder().encode


def populate(home: Path, count: int) -> int:
    """``count`` threads of two turns each; returns the bytes written."""
    total = 0
    for n in range(count):
        thread_id = f"thr_bench{n:06d}"
        b = LogBuilder(thread_id, start_at=1_767_225_600_000 + n * 60_000)
        b.create(workspace=f"/work/p{n % 7}", title=f"task {n}", provider="p", model="m")
        for t in range(2):
            b.start_turn(f"do step {t} of task {n}")
            b.assistant_text(["done ", f"step {t}"])
            b.usage(prompt_tokens=1200, completion_tokens=80, cost_usd=0.001)
            b.complete()
        path = home / "threads" / thread_id / "events.jsonl"
        path.parent.mkdir(parents=True)
        data = b"".join(_encode(e) + b"\n" for e in b.events)
        path.write_bytes(data)
        total += len(data)
    return total


def add_big(home: Path, events: int) -> int:
    """One thread of about ``events`` events (streamed text), the size a
    listing must not depend on once the index is warm; returns its bytes."""
    b = LogBuilder("thr_big", start_at=1_767_225_600_000)
    b.create(workspace="/work/big", title="a long one", provider="p", model="m")
    while len(b.events) < events:
        b.start_turn("go on")
        b.assistant_text(["tok "] * 1000)
        b.complete()
    path = home / "threads" / "thr_big" / "events.jsonl"
    path.parent.mkdir(parents=True)
    data = b"".join(_encode(e) + b"\n" for e in b.events)
    path.write_bytes(data)
    return len(data)


def _time(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=env)
    return time.perf_counter() - start


def _median(cmd: list[str], env: dict[str, str], runs: int, before: Path | None = None) -> float:
    """Median wall time of ``cmd``; ``before`` is deleted ahead of each run."""
    times = []
    for _ in range(runs):
        if before is not None:
            before.unlink(missing_ok=True)
        times.append(_time(cmd, env))
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--counts", default="10,1000,10000", help="thread counts, comma separated")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--big", type=int, default=200_000, help="events of one extra thread in the largest home"
    )
    parser.add_argument("--dir", type=Path, default=None, help="where to write (default: tmp)")
    args = parser.parse_args()
    counts = [int(c) for c in args.counts.split(",")]
    root = Path(tempfile.mkdtemp(prefix="kun-bench-threads-", dir=args.dir))
    kun_bin = shutil.which("kun", path=str(Path(sys.executable).parent)) or "kun"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    missed = False
    try:
        empty = root / "empty"
        empty.mkdir()
        base_cmd = [sys.executable, "-c", "import msgspec, click"]
        empty_cmd = [kun_bin, "threads", "--home", str(empty)]
        for _ in range(2):
            _time(base_cmd, env)
            _time(empty_cmd, env)
        base = _median(base_cmd, env, args.runs)
        start = _median(empty_cmd, env, args.runs)
        print(
            f"baselines: import msgspec, click {base * 1e3:.0f} ms; "
            f"kun threads on an empty home {start * 1e3:.0f} ms ({start / base:.2f}x)",
            flush=True,
        )
        for count in counts:
            home = root / f"home{count}"
            size = populate(home, count)
            big = count == max(counts) and args.big > 0
            if big:
                size += add_big(home, args.big)
            cmd = [kun_bin, "threads", "--home", str(home)]
            cold_runs = max(1, min(args.runs, 3 if count >= 5000 else args.runs))
            cold = _median(cmd, env, cold_runs, before=index_path(home))
            _time(cmd, env)
            warm = _median(cmd, env, args.runs)
            listing = warm - start
            ok = count < 10_000 or listing < TARGET_S
            missed |= not ok
            verdict = "" if count < 10_000 else f"  [{'ok' if ok else 'MISSED'}: < 200 ms]"
            print(
                f"{count:>6,} threads{f' + one of {args.big:,} events' if big else ''} "
                f"({size / 1e6:.1f} MB): "
                f"cold {cold * 1e3:,.0f} ms ({cold / base:.1f}x import, "
                f"{cold / start:.1f}x start-up); warm {warm * 1e3:,.0f} ms "
                f"({warm / base:.1f}x import, {warm / start:.2f}x start-up); "
                f"listing {listing * 1e3:,.0f} ms; cold/warm {cold / warm:.1f}x{verdict}",
                flush=True,
            )
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
