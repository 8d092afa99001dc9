"""Benchmark export and import of a thread against plain ``tar``.

    python tools/bench_portable.py [--turns 2000] [--runs 3]

Builds a thread of ``--turns`` turns (a prompt, a streamed answer, a tool
call and its result each: about 49 events a turn) through the store, then
times ``kun export`` (strict replay, hashes, gzip) against ``tar czf`` of the
thread's directory, and ``kun import`` (verify every hash, replay, install)
against ``tar xzf`` of that archive, all in this one run. Prints the median
seconds of each and the ratios kun / tar.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import anyio

from kun.portable.bundle import export_thread
from kun.portable.unbundle import import_bundle
from kun.store.jsonl import JsonlEventStore
from kun.testing.logbuilder import LogBuilder

THREAD = "thr_bench"


def _thread(home: Path, turns: int) -> int:
    b = LogBuilder(THREAD)
    b.create(workspace="/w")
    for turn in range(turns):
        b.start_turn(f"question {turn}")
        b.assistant_text(["piece "] * 40)
        b.run_tool("shell", {"cmd": "ls"}, "a\n" * 50)
        b.complete()

    async def write() -> None:
        async with JsonlEventStore(home) as store:
            await store.append(THREAD, b.events, expected_seq=0)

    anyio.run(write)
    return len(b.events)


def _median(runs: int, body: Callable[[int], object]) -> float:
    times = []
    for run in range(runs):
        start = time.perf_counter()
        body(run)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        home = root / "home"
        events = _thread(home, args.turns)
        size = (home / "threads" / THREAD / "events.jsonl").stat().st_size
        bundle = root / "t.kun.tar.gz"
        tgz = root / "t.tgz"
        threads = str(home / "threads")

        def kun_export(_: int) -> None:
            export_thread(home, THREAD, bundle, force=True)

        def tar_c(_: int) -> None:
            subprocess.run(["tar", "czf", str(tgz), "-C", threads, THREAD], check=True)

        def kun_import(run: int) -> None:
            import_bundle(root / f"in{run}", bundle)

        def tar_x(run: int) -> None:
            (root / f"x{run}").mkdir()
            subprocess.run(["tar", "xzf", str(tgz), "-C", str(root / f"x{run}")], check=True)

        export_s, tar_c_s = _median(args.runs, kun_export), _median(args.runs, tar_c)
        import_s, tar_x_s = _median(args.runs, kun_import), _median(args.runs, tar_x)
    print(f"thread: {events} events, {size / 1e6:.1f} MB log")
    print(f"export {export_s:.3f}s  tar czf {tar_c_s:.3f}s  ratio {export_s / tar_c_s:.2f}")
    print(f"import {import_s:.3f}s  tar xzf {tar_x_s:.3f}s  ratio {import_s / tar_x_s:.2f}")


if __name__ == "__main__":
    main()
