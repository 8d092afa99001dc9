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
- snapshot ``--tail`` events before the end: a thread that grew since;
- and, for both snapshots, reading the *outline* alone
  (``kun.store.snapshot.read_outline``: the thread and its settled turns
  without their items, what a thread list's summary needs).

Ratios are to the no-snapshot open, measured in this one run. Each run checks
that the opened state equals the full replay's last seq.

``--profile`` then splits the open from the end snapshot into its phases, in
a fresh process each (timed once without and once with ``tracemalloc``): what
an open pays for, so a change aims at the phase that costs (the phases read
every frame before decoding any, so what "read" holds is not an open's peak:
``resume`` reads a frame at a time). ``--sizes 10000
100000 1000000`` runs everything at each size.
"""

from __future__ import annotations

import argparse
import json
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
    check_snapshot(Path(home), sys.argv[3])
    print(took, peak_kb())

def check_snapshot(home: Path, thread: str) -> None:
    # A snapshot this process would not trust (kun's sources changed since it
    # was written: others edit the tree) would time a full fold instead.
    from kun.store.snapshot import code_digest, snapshot_path, unpack
    path = snapshot_path(home, thread)
    if path.exists():
        with path.open("rb") as file:
            header, _ = unpack(file.read(1 << 16))
        if header.code != code_digest():
            sys.exit("kun's sources changed during the run: run it again")

def outline(home: str, expect: int) -> None:
    from kun.store.paths import log_path
    from kun.store.snapshot import read_outline, snapshot_path
    thread = sys.argv[3]
    start = time.perf_counter()
    state = read_outline(snapshot_path(Path(home), thread), log_path(Path(home), thread), thread)
    took = time.perf_counter() - start
    check_snapshot(Path(home), thread)
    assert state is not None and state.last_seq == expect, expect
    print(took, peak_kb())

if sys.argv[1] == "-":
    print(0.0, peak_kb())
elif sys.argv[4:] == ["outline"]:
    outline(sys.argv[1], int(sys.argv[2]))
else:
    anyio.run(main, sys.argv[1], int(sys.argv[2]))
"""

_PHASES = """
import sys, time, tracemalloc
from pathlib import Path
import msgspec
from kun.domain.reduce import Projector
from kun.store import snapshot as s
from kun.store.jsonl import JsonlEventStore
from kun.store.paths import log_path
from kun.store.tail import scan_tail

home, thread, traced = Path(sys.argv[1]), sys.argv[2], sys.argv[3] == "1"
if traced:
    tracemalloc.start()
marks = []
def mark(name):
    size = tracemalloc.get_traced_memory()[0] if traced else 0
    marks.append((name, time.perf_counter(), size))
mark("start")
log = log_path(home, thread)
with open(log, "rb", buffering=0) as f:
    scan_tail(f.fileno(), log)
mark("find the log's end (scan_tail)")
with open(s.snapshot_path(home, thread), "rb") as snap, open(log, "rb", buffering=0) as f:
    head = s._HEADER.decode(s._read(snap, int.from_bytes(s._read(snap, 4), "big")))
    s._verify(head, f.fileno(), thread)
    mark("header + line digest")
    frames = [s._read(snap, int.from_bytes(s._read(snap, 8), "big")) for _ in range(head.turns + 1)]
    mark("read the frames")
    shell = s._SHELL.decode(frames[0])
    turns = [s._TURN.decode(frame) for frame in frames[1:]]
    mark("decode the frames (JSON)")
    for turn in turns:
        s._detach_arguments(turn)
    del frames
    mark("detach tool-call arguments")
    projector = Projector(msgspec.structs.replace(shell, turns=tuple(turns)))
    del turns, shell
    mark("Projector(state): a TurnFold per turn")
    projector.apply_all(s._tail(f.fileno(), head.offset, head.last_seq, thread))
    mark("fold the tail")
    state = projector.snapshot()
    mark("snapshot()")
if not traced:
    resumed = s.resume(s.snapshot_path(home, thread), log, thread)
    if resumed is None or resumed.snapshot() != state:
        raise SystemExit("the phases no longer do what kun.store.snapshot.resume does")
print(msgspec.json.encode([(n, t - marks[0][1], m) for n, t, m in marks]).decode())
"""


def _run(home: Path | None, expect: int, what: str = "open") -> tuple[float, float]:
    """Seconds to open (or read the outline), peak RSS in MB of a fresh process."""
    argv = [sys.executable, "-c", _CHILD, str(home) if home else "-", str(expect), THREAD, what]
    done = subprocess.run(argv, check=False, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(done.stderr.strip().splitlines()[-1])
    out = done.stdout.split()
    return float(out[0]), int(out[1]) / 1024


def _measure(home: Path, expect: int, runs: int, what: str = "open") -> tuple[float, float]:
    results = [_run(home, expect, what) for _ in range(runs)]
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


def _phases(home: Path, traced: bool) -> list[tuple[str, float, int]]:
    argv = [sys.executable, "-c", _PHASES, str(home), THREAD, "1" if traced else "0"]
    out = subprocess.run(argv, check=True, capture_output=True, text=True).stdout
    marks = [(str(n), float(t), int(m)) for n, t, m in json.loads(out)]
    return [(n, t - marks[i][1], m) for i, (n, t, m) in enumerate(marks[1:])]


def _print_phases(home: Path, runs: int) -> None:
    """Each phase's median time over ``runs`` and, from one traced run, the
    memory it leaves held (tracemalloc, Python allocations only)."""
    timed = [_phases(home, traced=False) for _ in range(runs)]
    held = _phases(home, traced=True)
    total = sum(statistics.median(run[i][1] for run in timed) for i in range(len(held)))
    print(f"{'phases of an open from the end snapshot':<42} {'time':>9} {'share':>6} {'held':>9}")
    for i, (name, _, memory) in enumerate(held):
        took = statistics.median(run[i][1] for run in timed)
        print(f"{name:<42} {took * 1e3:6,.0f} ms {took / total:6.0%} {memory / 1e6:6,.0f} MB")


def _bench(events: int, tail: int, runs: int, where: Path | None, profile: bool) -> None:
    home = Path(tempfile.mkdtemp(prefix="kun-bench-open-", dir=where))
    try:
        log = log_path(home, THREAD)
        log.parent.mkdir(parents=True)
        count = generate(log, events)
        print(f"log: {count:,} events, {log.stat().st_size / 1e6:,.0f} MB", flush=True)
        _, base_mb = _run(None, 0)
        rows: list[tuple[str, float, float]] = []
        full_s, full_mb = _measure(home, count, runs)
        rows.append(("no snapshot (full fold)", full_s, full_mb))
        snap = snapshot_path(home, THREAD)
        _snapshot_at(log, snap, count)
        print(f"snapshot: {snap.stat().st_size / 1e6:,.0f} MB", flush=True)
        rows.append(("snapshot at the end", *_measure(home, count, runs)))
        rows.append(("outline at the end", *_measure(home, count, runs, "outline")))
        if profile:
            _print_phases(home, runs)
        _snapshot_at(log, snap, count - tail)
        rows.append((f"snapshot + {tail:,}-event tail", *_measure(home, count, runs)))
        rows.append((f"outline + {tail:,}-event tail", *_measure(home, count, runs, "outline")))
        print(
            f"{'open ' + format(count, ',') + ' events':<40} {'time':>9} {'ratio':>6} "
            f"{'peak RSS':>11} {'ratio':>6}  (RSS above a bare import: {base_mb:,.0f} MB)"
        )
        for name, took, peak in rows:
            print(
                f"{name:<40} {took * 1e3:7,.0f} ms {took / full_s:6.2f} "
                f"{peak - base_mb:8,.0f} MB {(peak - base_mb) / (full_mb - base_mb):6.2f}"
            )
    finally:
        shutil.rmtree(home, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--sizes", type=int, nargs="+", default=None, help="instead of --events")
    parser.add_argument("--tail", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--profile", action="store_true", help="time each phase of an open")
    parser.add_argument("--dir", type=Path, default=None, help="where to write (default: tmp)")
    args = parser.parse_args()
    for events in args.sizes or [args.events]:
        _bench(events, min(args.tail, events // 2), args.runs, args.dir, args.profile)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
