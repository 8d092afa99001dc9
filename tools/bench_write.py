"""Benchmark the write path: the recorder's delta path vs a bare loop.

    python tools/bench_write.py [--deltas 20000] [--dir DIR]

Prints, as ratios measured in this one run (issue 10, item 7):

- recorder delta path / bare loop: ``EventRecorder.record`` of one text
  delta at a time over a :class:`JsonlEventStore` on disk, against a bare
  loop that makes the same writes (the very lines the recorder wrote, one
  ``os.write`` each) with the same group commit (fsync every 64 lines or
  5 ms). Rates are fragments per second; the ratio is recorder / bare
  (target >= 0.5), with the coalescing window closed (``coalesce_ms=0``:
  every fragment is written, so the whole per-delta path is timed). With
  the default 30 ms window the fragments merge into a few writes, and the
  recorder's cost per fragment is printed for information.
- the same without any fsync (both sides), for information: the CPU the
  recorder spends per fragment (stamp, validate, encode, append, publish)
  against the bare ``os.write``. fsync latency on a shared disk swings the
  first ratio from run to run; this one does not.

Each figure pairs a recorder run with a bare run right after it (five
pairs) and prints the median of the pairs' ratios, so both sides of a ratio
meet the same disk.

fsyncs per tool step are printed by ``tools/bench_loop.py``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import anyio

from kun.contracts import events as ev
from kun.runtime.recorder import EventRecorder
from kun.store import jsonl
from kun.store.jsonl import JsonlEventStore

TID = "t_write"
ROUNDS = 5
_sync = getattr(os, "fdatasync", os.fsync)
"""The store's own call (``kun.store.jsonl``), so both sides sync alike."""


def _drafts(n: int) -> list[ev.Event]:
    return [
        ev.AssistantTextDelta(
            seq=0, at=0, thread_id="", turn_id="turn_w", item_id="txt_w", text="word"
        )
        for _ in range(n)
    ]


async def _recorder(home: Path, n: int, window_ms: float) -> tuple[float, list[bytes]]:
    """Fragments per second through the recorder, and the delta lines it wrote."""
    async with (
        JsonlEventStore(home) as store,
        EventRecorder(store, coalesce_ms=window_ms) as recorder,
    ):
        await recorder.record(TID, ev.ThreadCreated(seq=0, at=0, thread_id=""))
        await recorder.record(TID, ev.TurnStarted(seq=0, at=0, thread_id="", turn_id="turn_w"))
        drafts = _drafts(n)
        record = recorder.record
        start = time.perf_counter()
        for draft in drafts:
            await record(TID, draft)
        await recorder.flush(TID)
        await store.sync(TID)
        elapsed = time.perf_counter() - start
    return n / elapsed, _delta_lines(home)


def _delta_lines(home: Path) -> list[bytes]:
    log = next(home.rglob("events.jsonl")).read_bytes().splitlines(keepends=True)
    return [line for line in log if b'"assistant_text_delta"' in line]


def _bare(path: Path, n: int, lines: list[bytes]) -> float:
    """Fragments per second of a loop making ``lines``' writes, group committed."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        start = time.perf_counter()
        unsynced, first = 0, 0.0
        for line in lines:
            os.write(fd, line)
            now = time.monotonic()
            if unsynced == 0:
                first = now
            unsynced += 1
            if unsynced >= 64 or now - first >= 0.005:
                _sync(fd)
                unsynced = 0
        _sync(fd)
        return n / (time.perf_counter() - start)
    finally:
        os.close(fd)


def bench_recorder_deltas(
    root: Path, n: int, window_ms: float, rounds: int = ROUNDS
) -> tuple[float, float, float, int]:
    """(recorder rate, bare rate, ratio, writes): medians over ``rounds``
    pairs of a recorder run and a bare run right after it; the ratio is the
    median of each pair's, so both sides of it meet the same disk."""
    kun, bare, ratios, writes = [], [], [], 0
    for i in range(rounds):
        home = root / f"rec-{window_ms:g}-{i}"
        rate, lines = anyio.run(_recorder, home, n, window_ms)
        kun.append(rate)
        bare.append(_bare(root / f"bare-{window_ms:g}-{i}.jsonl", n, lines))
        ratios.append(kun[-1] / bare[-1])
        writes = len(lines)
        shutil.rmtree(home, ignore_errors=True)
        (root / f"bare-{window_ms:g}-{i}.jsonl").unlink()
    return statistics.median(kun), statistics.median(bare), statistics.median(ratios), writes


@contextlib.contextmanager
def _no_fsync() -> Iterator[None]:
    """Both sides without fsync: the store's and the bare loop's."""
    global _sync
    saved = _sync, jsonl._fsync
    _sync = jsonl._fsync = lambda fd: None
    try:
        yield
    finally:
        _sync, jsonl._fsync = saved


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--deltas", type=int, default=20_000)
    parser.add_argument("--dir", type=Path, default=None, help="where to write (default: tmp)")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="kun-bench-write-", dir=args.dir))
    try:
        kun, bare, ratio, writes = bench_recorder_deltas(root, args.deltas, 0.0)
        missed = ratio < 0.5
        print(
            f"recorder delta path, window closed: {kun:,.0f} fragments/s vs bare "
            f"{bare:,.0f}/s ({writes:,} writes): ratio {ratio:.2f} (>= 0.5)  "
            f"[{'ok' if not missed else 'MISSED'}]",
            flush=True,
        )
        with _no_fsync():
            kun, bare, ratio, _ = bench_recorder_deltas(root, args.deltas, 0.0)
        print(
            f"recorder delta path, window closed, no fsync: {1e6 / kun:.2f} us vs bare "
            f"{1e6 / bare:.2f} us per fragment: ratio {ratio:.2f} (for information)",
            flush=True,
        )
        kun, _, _, writes = bench_recorder_deltas(root, args.deltas, 30.0, rounds=3)
        print(
            f"recorder delta path, 30 ms window: {1e6 / kun:.2f} us per fragment "
            f"({writes:,} writes of {args.deltas:,} fragments; for information)",
            flush=True,
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
