"""Benchmark how soon ``kun replay`` of a long thread prints its first line.

    python tools/bench_replay.py [--events 1000000] [--runs 3] [--dir DIR]

Builds one thread of ``--events`` events with ``tools/bench_log.py``'s
generator and runs ``kun replay THREAD`` in a fresh process per run (median
of ``--runs``), timing the first byte on its stdout and its exit. Printed as
ratios to the full replay measured in this run (issue 10, item 2):

- time to first output vs the full replay: 1.00 while the transcript is
  printed only after the whole log is folded, near 0 once turns stream;
- the same for a one-turn thread: the floor (start-up), what a streaming
  replay's first line could cost at best;
- in process, the fold (``replay_log``) and the rendering
  (``render_transcript``) of the long thread: where the wait goes.

Then each replay's rate (events per second of ``kun replay`` and of ``kun
replay --json``, whole process, output discarded) as a ratio to a bare typed
decode of every line in this process (target >= 0.8), and the peak RSS of
``kun replay --json`` (the child's own ``VmHWM``; target < 200 MB). The
rate ratios are printed once more in CPU time (the child's user + system
time against this process's decode), which a busy machine disturbs less
than wall time. Then the scan for a rewind a replay without a snapshot
waits for before its first turn: ``bytes.find`` in this process against
``rg`` (what ``kun replay`` runs, :mod:`kun.app.rewind_scan`), best of
``--runs``. Last, the same replays with the snapshot a clean exit leaves
beside the log.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import msgspec
from bench_log import THREAD, _lines, generate

from kun.app.rewind_scan import RewindScan
from kun.contracts.events import Event
from kun.domain.transcript import render_transcript
from kun.store.paths import log_path
from kun.store.replay import replay_log
from kun.store.snapshot import snapshot_path, write_snapshot
from kun.store.streaming import may_rewind


def _kun() -> str:
    return shutil.which("kun", path=str(Path(sys.executable).parent)) or "kun"


def _run(home: Path, thread: str) -> tuple[float, float]:
    """Seconds to the first byte on stdout and to exit of ``kun replay``."""
    argv = [_kun(), "replay", thread, "--home", str(home)]
    start = time.perf_counter()
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL) as child:
        assert child.stdout is not None
        first_byte = child.stdout.read(1)
        first = time.perf_counter() - start
        size = len(first_byte) + len(child.stdout.read())
        code = child.wait()
    total = time.perf_counter() - start
    if code != 0 or size == 0:
        raise SystemExit(f"kun replay {thread} failed (exit {code}, {size} bytes)")
    return first, total


def _measure(home: Path, thread: str, runs: int) -> tuple[float, float]:
    _run(home, thread)
    results = [_run(home, thread) for _ in range(runs)]
    return statistics.median(f for f, _ in results), statistics.median(t for _, t in results)


def _rate(home: Path, thread: str, flags: tuple[str, ...], count: int) -> float:
    """Events per second of a whole ``kun replay`` process, its output discarded."""
    argv = [_kun(), "replay", thread, "--home", str(home), *flags]
    took = []
    for _ in range(2):
        start = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        took.append(time.perf_counter() - start)
    return count / min(took)


def _cpu_ratio(home: Path, thread: str, flags: tuple[str, ...], log: Path) -> float:
    """CPU seconds (user + system) of a bare typed decode in this process
    over those of a whole ``kun replay`` process, best of 2 each: the rate
    ratio as the processor sees it, which other load on a shared machine
    moves far less than wall time."""
    argv = [_kun(), "replay", thread, "--home", str(home), *flags]
    decode = msgspec.json.Decoder(Event).decode
    raw = replay = float("inf")
    for _ in range(2):
        start = time.process_time()
        sum(1 for line in _lines(log) if line and decode(line))
        raw = min(raw, time.process_time() - start)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        used = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
        replay = min(replay, used)
    return raw / replay


def _raw_rate(log: Path) -> float:
    """Events per second of a bare typed decode of every line (best of 2)."""
    decode = msgspec.json.Decoder(Event).decode
    took = []
    for _ in range(2):
        start = time.perf_counter()
        count = sum(1 for line in _lines(log) if line and decode(line))
        took.append(time.perf_counter() - start)
    return count / min(took)


_PEAK = (
    "import atexit, sys\n"
    "def peak():\n"
    "    for l in open('/proc/self/status'):\n"
    "        if l.startswith('VmHWM:'): sys.__stderr__.write('VmHWM ' + l.split()[1] + '\\n')\n"
    "atexit.register(peak)\n"
    "from kun.entry import main\n"
    "sys.argv = ['kun', *sys.argv[1:]]\n"
    "main()\n"
)


def _peak_mb(home: Path, thread: str, flags: tuple[str, ...]) -> float:
    """Peak RSS (MB) of ``kun replay THREAD FLAGS``, read by the child itself."""
    argv = [sys.executable, "-c", _PEAK, "replay", thread, "--home", str(home), *flags]
    done = subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    line = next(x for x in done.stderr.decode().splitlines() if x.startswith("VmHWM "))
    return int(line.split()[1]) / 1024


def _in_process(log: Path) -> tuple[float, float]:
    """Seconds to fold the log and to render its transcript."""
    start = time.perf_counter()
    state = replay_log(log, mode="tolerant")
    folded = time.perf_counter()
    render_transcript(state)
    return folded - start, time.perf_counter() - folded


def _scans(log: Path, runs: int) -> tuple[float, float, float]:
    """Best seconds of the whole-log rewind scan: in process (CPU), then
    through ``rg`` (wall, and the CPU ``rg`` used)."""
    here = by_rg = rg_cpu = float("inf")
    for _ in range(runs):
        start = time.process_time()
        may_rewind(log)
        here = min(here, time.process_time() - start)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        with RewindScan(log) as scan:
            scan.may_rewind()
        by_rg = min(by_rg, time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        used = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
        rg_cpu = min(rg_cpu, used)
    return here, by_rg, rg_cpu


def _with_snapshot(home: Path, log: Path, count: int, raw: float, runs: int) -> None:
    """The same thread with the snapshot a clean exit leaves beside it."""
    if not write_snapshot(snapshot_path(home, THREAD), log, replay_log(log, mode="tolerant")):
        raise SystemExit("could not write the snapshot")
    first, total = _measure(home, THREAD, runs)
    rate = _rate(home, THREAD, (), count)
    json_rate = _rate(home, THREAD, ("--json",), count)
    print(
        f"with a snapshot at the end: first output {first * 1e3:,.0f} ms, full replay "
        f"{total * 1e3:,.0f} ms; rate / raw decode: kun replay {rate / raw:.2f}, "
        f"--json {json_rate / raw:.2f}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=None, help="where to write (default: tmp)")
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="kun-bench-replay-", dir=args.dir))
    try:
        log = log_path(home, THREAD)
        log.parent.mkdir(parents=True)
        count = generate(log, args.events)
        print(f"log: {count:,} events, {log.stat().st_size / 1e6:,.0f} MB", flush=True)
        small = log_path(home, "t_small")
        small.parent.mkdir(parents=True)
        small_count = generate(small, 10)
        small.write_bytes(small.read_bytes().replace(THREAD.encode(), b"t_small"))
        first, total = _measure(home, THREAD, args.runs)
        small_first, small_total = _measure(home, "t_small", args.runs)
        fold, render = _in_process(log)
        print(f"{'kun replay':<44} {'time':>9} {'ratio to full replay':>21}")
        rows = [
            (f"full replay, {count:,} events", total),
            (f"first output, {count:,} events", first),
            (f"first output, {small_count}-event thread (floor)", small_first),
            (f"full replay, {small_count}-event thread", small_total),
            ("in process: fold (replay_log)", fold),
            ("in process: render_transcript", render),
        ]
        for name, took in rows:
            print(f"{name:<44} {took * 1e3:7,.0f} ms {took / total:21.3f}")
        raw = _raw_rate(log)
        print(f"{'rate':<44} {'events/s':>9} {'ratio to raw decode':>21}")
        for name, flags in (("kun replay", ()), ("kun replay --json", ("--json",))):
            rate = _rate(home, THREAD, flags, count)
            print(f"{name:<44} {rate:9,.0f} {rate / raw:21.2f}  (target >= 0.8)")
        print(f"{'raw typed decode':<44} {raw:9,.0f} {1:21.2f}")
        for name, flags in (("kun replay", ()), ("kun replay --json", ("--json",))):
            ratio = _cpu_ratio(home, THREAD, flags, log)
            print(f"{name + ', CPU time':<44} {'':9} {ratio:21.2f}")
        peak = _peak_mb(home, THREAD, ("--json",))
        print(f"peak RSS of kun replay --json: {peak:,.0f} MB (target < 200 MB)")
        print(f"first output: {first * 1e3:,.0f} ms (target < 200 ms)")
        here, by_rg, rg_cpu = _scans(log, args.runs)
        print(
            f"rewind scan of the whole log: in process {here * 1e3:,.0f} ms CPU; rg "
            f"{by_rg * 1e3:,.0f} ms wall, {rg_cpu * 1e3:,.0f} ms CPU "
            f"(rg / in process: {by_rg / here:.2f} wall, {rg_cpu / here:.2f} CPU)"
        )
        _with_snapshot(home, log, count, raw, args.runs)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
