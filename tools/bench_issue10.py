"""Every row of issue 10's table, measured in one run, beside its target.

    python tools/bench_issue10.py [--quick] [--events N] [--scale 10000,100000,1000000]
                                  [--counts 10,1000,10000] [--big 200000] [--runs 3]
                                  [--deltas 20000] [--steps 10,50] [--dir DIR]

One command for the whole issue: it reuses the measurements of the tools
that own each row (``bench_replay``, ``bench_open``, ``bench_threads``,
``bench_write``, ``bench_loop``, ``bench_log``'s generator and
``bench_economy`` for the log-bytes rows) by importing their functions, so a
row here is measured exactly as its own tool measures it. Printed as
markdown tables (what | measured | target | met?):

- the issue's table, row by row, on one thread of ``--events`` events;
- ``kun threads`` wall time for each of ``--counts`` threads, cold (the
  thread index deleted, so every log is replayed) and warm, beside kun's
  start-up on an empty home;
- replay time and peak RSS of a full fold at each of ``--scale`` events,
  and the time and peak RSS of opening the same thread from a snapshot
  (memory should not grow with the log's length).

Ratios compare runs made in this one process on this one machine; absolute
times are for information, and move with the load of a shared machine.
The full run takes about 90 s on two busy cores; ``--quick`` (a smoke
run, about 20 s) shrinks every size, and explicit flags override either.
Progress goes to stderr, the tables to stdout. Exit status 1 if a target
is missed.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import bench_log
import bench_open
import bench_replay
import bench_threads
import bench_write

from kun.domain.reduce import Projector
from kun.store.paths import log_path
from kun.store.reader import read_log
from kun.store.snapshot import snapshot_path

TOOLS = Path(__file__).resolve().parent
THREAD = bench_log.THREAD

FULL = {
    "events": 1_000_000,
    "scale": "10000,100000,1000000",
    "counts": "10,1000,10000",
    "big": 200_000,
    "runs": 3,
    "deltas": 20_000,
    "steps": "10,50",
}
QUICK = {
    "events": 100_000,
    "scale": "1000,10000,100000",
    "counts": "10,100,1000",
    "big": 0,
    "runs": 2,
    "deltas": 5_000,
    "steps": "5,15",
}


@dataclass(frozen=True)
class Row:
    what: str
    measured: str
    target: str
    met: bool | None


def _verdict(met: bool | None) -> str:
    return "—" if met is None else ("yes" if met else "**no**")


def table(rows: list[Row]) -> str:
    lines = ["| what | measured | target | met? |", "| --- | --- | --- | --- |"]
    lines += [f"| {r.what} | {r.measured} | {r.target} | {_verdict(r.met)} |" for r in rows]
    return "\n".join(lines)


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


class Logs:
    """Generated thread logs by requested size, each alone in its own home,
    built once and shared by every measurement that needs that size."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._made: dict[int, tuple[Path, Path, int]] = {}

    def get(self, events: int) -> tuple[Path, Path, int]:
        """(home, log, events written) of a thread of about ``events`` events."""
        if events not in self._made:
            home = self.root / f"home-{events}"
            log = log_path(home, THREAD)
            log.parent.mkdir(parents=True)
            count = bench_log.generate(log, events)
            _say(f"log: {count:,} events, {log.stat().st_size / 1e6:,.0f} MB")
            self._made[events] = (home, log, count)
        return self._made[events]


# -- the issue's table ---------------------------------------------------------


Economy = dict[str, dict[int, tuple[float, float]]]


def economy(script: Path) -> tuple[Economy, str | None]:
    """Run ``script`` (``tools/bench_economy.py``) and read its cases: a
    title line (``600 tokens of 4 chars, an answer alone: ...``), then rows
    ``<pace>ms <before>x <now>x ...``: {case: {pace in ms: (before, now)}},
    or why not."""
    if not script.exists():
        return {}, f"not measured: tools/{script.name} missing"
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    found: Economy = {}
    case = ""
    for line in done.stdout.splitlines():
        row = re.match(r"^\s*(\d+)\s*ms\s+([\d.]+)x\s+([\d.]+)x", line)
        if row:
            found.setdefault(case, {})[int(row[1])] = (float(row[2]), float(row[3]))
        elif line.strip() and not line.lstrip().startswith("pace"):
            case = line.split(":", 1)[0].strip()
    if done.returncode != 0 or not found:
        return found, f"not measured: tools/{script.name} failed (exit {done.returncode})"
    return found, None


def economy_rows() -> list[Row]:
    """The log-bytes rows, as ``tools/bench_economy.py`` measures them: the
    two paces of the issue's table for each of its cases."""
    _say("log bytes per streamed text byte (tools/bench_economy.py)")
    paces = ((20, "≤ 2x", 2.0), (1, "≤ 1.5x", 1.5))
    cases, why = economy(TOOLS / "bench_economy.py")
    if not cases:
        return [
            Row(
                f"log bytes / streamed text byte, 4-char tokens {pace} ms apart", why or "", t, None
            )
            for pace, t, _ in paces
        ]
    rows = []
    for case, ratios in cases.items():
        for pace, target, limit in paces:
            what = f"log bytes / streamed text byte, {pace} ms per token: {case}"
            if pace not in ratios:
                rows.append(Row(what, why or f"not measured: no {pace} ms row", target, None))
                continue
            before, now = ratios[pace]
            rows.append(Row(what, f"{now:.2f}x (before: {before:.2f}x)", target, now <= limit))
    return rows


def replay_rows(logs: Logs, events: int, runs: int) -> list[Row]:
    home, log, count = logs.get(events)
    _say("kun replay: rates, first output, peak RSS")
    raw = bench_replay._raw_rate(log)
    text = bench_replay._rate(home, THREAD, (), count) / raw
    json = bench_replay._rate(home, THREAD, ("--json",), count) / raw
    first, total = bench_replay._measure(home, THREAD, runs)
    peak = bench_replay._peak_mb(home, THREAD, ("--json",))
    return [
        Row(
            "`kun replay` (transcript) rate / raw typed decode", f"{text:.2f}", "≥ 0.8", text >= 0.8
        ),
        Row("`kun replay --json` rate / raw decode", f"{json:.2f}", "≥ 0.8", json >= 0.8),
        Row(
            f"time to first output of `kun replay` on {count:,} events",
            f"{first:.3f} s (whole replay {total:.2f} s)",
            "< 0.2 s",
            first < 0.2,
        ),
        Row(
            f"peak RSS, `kun replay --json` of {count:,} events",
            f"{peak:,.0f} MB",
            "< 200 MB",
            peak < 200,
        ),
    ]


def open_rows(logs: Logs, events: int, runs: int) -> list[Row]:
    home, log, count = logs.get(events)
    _say("open to continue: no snapshot, snapshot at the end, snapshot + tail")
    snap = snapshot_path(home, THREAD)
    snap.unlink(missing_ok=True)
    full, _ = bench_open._measure(home, count, runs)
    bench_open._snapshot_at(log, snap, count)
    at_end, _ = bench_open._measure(home, count, runs)
    tail = min(10_000, count // 10)
    bench_open._snapshot_at(log, snap, count - tail)
    with_tail, _ = bench_open._measure(home, count, runs)
    snap.unlink()
    return [
        Row(
            f"opening a {count:,}-event thread to continue it (snapshot of a clean exit)",
            f"{at_end * 1e3:,.0f} ms (full replay {full * 1e3:,.0f} ms)",
            "< 100 ms",
            at_end < 0.1,
        ),
        Row(
            f"same, snapshot {tail:,} events behind the log",
            f"{with_tail * 1e3:,.0f} ms",
            "< 100 ms",
            with_tail < 0.1,
        ),
    ]


def write_rows(root: Path, deltas: int) -> list[Row]:
    _say("recorder delta path vs a bare loop")
    _, _, ratio, _ = bench_write.bench_recorder_deltas(root, deltas, 0.0)
    return [
        Row(
            "recorder delta path / a bare loop doing the same writes and group commit",
            f"{ratio:.2f}",
            "≥ 0.5",
            ratio >= 0.5,
        )
    ]


def loop_rows(root: Path, steps: tuple[int, int]) -> list[Row]:
    """fsyncs and log lines per tool step: the difference between a turn of
    ``steps[1]`` and one of ``steps[0]`` steps (each step but the last
    calls a tool), so what every turn pays once is left out."""
    _say(f"fsyncs per tool step: turns of {steps[0]} and {steps[1]} steps")
    bench_loop = importlib.import_module("bench_loop")
    lo, hi = bench_loop.run_kun(list(steps), root)
    span = hi["steps"] - lo["steps"]
    fsyncs = (hi["fsyncs"] - lo["fsyncs"]) / span
    lines = (hi["events"] - lo["events"]) / span
    return [
        Row("fsyncs per tool step", f"{fsyncs:.2f}", "1", fsyncs <= 1.0),
        Row("log lines per tool step (for information)", f"{lines:.1f}", "—", None),
    ]


# -- kun threads ---------------------------------------------------------------


def _paired(cmd: list[str], base: list[str], env: dict[str, str], runs: int) -> tuple[float, float]:
    """Medians of ``cmd`` and ``base`` run in turns, so a change in the
    machine's load falls on both alike."""
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(runs):
        times[0].append(bench_threads._time(cmd, env))
        times[1].append(bench_threads._time(base, env))
    return statistics.median(times[0]), statistics.median(times[1])


def threads_rows(root: Path, counts: list[int], big: int, runs: int) -> tuple[list[Row], Row]:
    """One row per count, and the issue's row (the largest count). The
    listing's own cost is the warm run less kun's start-up (``kun threads``
    on an empty home), the two timed in turns."""
    kun = shutil.which("kun", path=str(Path(sys.executable).parent)) or "kun"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    empty = root / "threads-empty"
    empty.mkdir()
    empty_cmd = [kun, "threads", "--home", str(empty)]
    bench_threads._time(empty_cmd, env)
    rows = []
    listing = 0.0
    for count in counts:
        _say(f"kun threads: {count:,} threads")
        home = root / f"threads-{count}"
        bench_threads.populate(home, count)
        extra = ""
        if count == max(counts) and big > 0:
            bench_threads.add_big(home, big)
            extra = f" + one of {big:,} events"
        cmd = [kun, "threads", "--home", str(home)]
        cold = bench_threads._median(
            cmd, env, 1 if count >= 5000 else runs, before=bench_threads.index_path(home)
        )
        bench_threads._time(cmd, env)
        warm, start = _paired(cmd, empty_cmd, env, max(runs, 5))
        listing = warm - start
        rows.append(
            Row(
                f"`kun threads`, {count:,} threads{extra}",
                f"warm {warm * 1e3:,.0f} ms, listing {listing * 1e3:,.0f} ms "
                f"(cold {cold * 1e3:,.0f} ms; start-up {start * 1e3:,.0f} ms)",
                "< 0.2 s listing" if count == max(counts) else "—",
                listing < 0.2 if count == max(counts) else None,
            )
        )
        shutil.rmtree(home, ignore_errors=True)
    largest = max(counts)
    issue = Row(
        f"`kun threads`, {largest:,} threads (warm index, beyond kun's start-up)",
        f"{listing:.3f} s",
        "< 0.2 s",
        listing < 0.2,
    )
    return rows, issue


# -- scaling -------------------------------------------------------------------


def _fold_seconds(log: Path, runs: int) -> float:
    best = float("inf")
    for _ in range(max(runs, 1)):
        start = time.perf_counter()
        projector = Projector()
        projector.apply_all(read_log(log))
        projector.snapshot()
        best = min(best, time.perf_counter() - start)
    return best


def scale_rows(logs: Logs, sizes: list[int], runs: int) -> tuple[list[Row], list[Row]]:
    """Per size: full replay time and peak RSS, and opening from a snapshot;
    then two verdicts: replay time linear, snapshot memory flat."""
    _, base_mb = bench_open._run(None, 0)
    rows: list[Row] = []
    per_event: list[float] = []
    snap_mb: list[float] = []
    for size in sizes:
        home, log, count = logs.get(size)
        _say(f"scale: {count:,} events")
        fold = _fold_seconds(log, runs)
        peak = bench_log.peak_replay_memory(log)
        snap = snapshot_path(home, THREAD)
        bench_open._snapshot_at(log, snap, count)
        opened, opened_mb = bench_open._measure(home, count, runs)
        snap.unlink()
        per_event.append(fold / count)
        snap_mb.append(opened_mb - base_mb)
        rows.append(
            Row(
                f"{count:,} events",
                f"replay {fold * 1e3:,.0f} ms ({fold / count * 1e6:.2f} µs/event), "
                f"peak RSS {peak:,.0f} MB; from a snapshot {opened * 1e3:,.0f} ms, "
                f"{opened_mb - base_mb:,.0f} MB above a bare import",
                "—",
                None,
            )
        )
    growth = per_event[-1] / per_event[0]
    flat = snap_mb[-1] / max(snap_mb[0], 1.0)
    span = f"{sizes[-1]:,} / {sizes[0]:,} events"
    verdicts = [
        Row(
            f"replay time linear: µs per event, {span}",
            f"{growth:.2f}",
            "≤ 1.5",
            growth <= 1.5,
        ),
        Row(
            f"memory flat with snapshots: peak RSS opening from a snapshot, {span}",
            f"{snap_mb[-1]:,.0f} / {snap_mb[0]:,.0f} MB = {flat:.2f}",
            "≤ 1.5",
            flat <= 1.5,
        ),
    ]
    return rows, verdicts


# -- main ----------------------------------------------------------------------


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes: a smoke run")
    parser.add_argument("--events", type=int, help="events of the table's long thread")
    parser.add_argument("--scale", help="thread sizes for replay time and memory")
    parser.add_argument("--counts", help="thread counts for kun threads")
    parser.add_argument("--big", type=int, help="events of one extra thread in the largest home")
    parser.add_argument("--runs", type=int, help="runs per timing (median or best)")
    parser.add_argument("--deltas", type=int, help="fragments through the recorder")
    parser.add_argument("--steps", help="two turn lengths for fsyncs per tool step")
    parser.add_argument("--dir", type=Path, default=None, help="where to write (default: tmp)")
    args = parser.parse_args(argv)
    for key, value in (QUICK if args.quick else FULL).items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    steps = _ints(args.steps)
    if len(steps) != 2 or steps[0] >= steps[1] or steps[0] < 2:
        raise SystemExit("--steps takes two turn lengths, the first at least 2: e.g. 10,50")
    started = time.perf_counter()
    root = Path(tempfile.mkdtemp(prefix="kun-bench-issue10-", dir=args.dir))
    try:
        logs = Logs(root)
        parts: list[Callable[[], list[Row]]] = [
            economy_rows,
            lambda: replay_rows(logs, args.events, args.runs),
        ]
        issue: list[Row] = [row for part in parts for row in part()]
        threads, threads_issue = threads_rows(root, _ints(args.counts), args.big, args.runs)
        issue.append(threads_issue)
        issue += open_rows(logs, args.events, args.runs)
        issue += write_rows(root, args.deltas)
        issue += loop_rows(root, (steps[0], steps[1]))
        scale, verdicts = scale_rows(logs, _ints(args.scale), args.runs)
        issue += verdicts
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print("## Issue 10: the table\n")
    print(table(issue))
    print("\n## `kun threads`\n")
    print(table(threads))
    print("\n## Replay and open from a snapshot, by log length\n")
    print(table(scale))
    missed = [r.what for r in issue if r.met is False]
    print(f"\n{len(missed)} of {sum(r.met is not None for r in issue)} targets missed; ", end="")
    print(f"measured in {time.perf_counter() - started:,.0f} s")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
