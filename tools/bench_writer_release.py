"""Benchmark holding a thread's writer lock only while writing it.

    python tools/bench_writer_release.py [--writes 300] [--runs 5]

"held" is kun before: the service kept every thread it opened claimed (its
log and lock file open) until it stopped. "released" is kun now: a write
outside a turn claims the thread (open, ``flock``, a read of the log's
tail) and releases it when done (fsync, close). Two operations, each timed
over ``--writes`` calls on one thread:

* a write outside a turn (``update_thread``: one durable event, fsynced);
* a read of an idle thread, as ``GET /v1/threads/{id}`` does: "held" read
  the writer's projection, "released" reads the log's last seq (one small
  read at its end) and then the same projection.

Medians over ``--runs``; ratios are released / held from this one run.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio

from kun.contracts.threads import ThreadSettings
from kun.runtime.recorder import EventRecorder
from kun.runtime.service import TurnService
from kun.store.jsonl import JsonlEventStore


async def _noop(thread_id: str) -> None:
    return None


async def _timed(calls: int, call: Callable[[int], Awaitable[object]]) -> float:
    began = time.perf_counter()
    for index in range(calls):
        await call(index)
    return (time.perf_counter() - began) / calls


async def _measure(home: Path, writes: int, *, release: bool) -> tuple[float, float]:
    store = JsonlEventStore(home)
    async with store, EventRecorder(store) as recorder, anyio.create_task_group() as tg:
        service = TurnService(recorder, tg)
        if not release:
            service._release = _noop  # type: ignore[method-assign]
        thread_id = await service.create_thread(ThreadSettings(workspace=str(home)))
        await service.open_thread(thread_id)
        if release:
            await service.release_if_idle(thread_id)

        async def write(index: int) -> None:
            await service.update_thread(thread_id, title=f"title {index}")

        async def read(index: int) -> None:
            if release:
                await recorder.view(thread_id)
            else:
                service.state(thread_id)

        wrote = await _timed(writes, write)
        read_each = await _timed(writes * 10, read)
        tg.cancel_scope.cancel()
    return wrote, read_each


async def _main(writes: int, runs: int) -> None:
    results: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
    for _ in range(runs):
        for release in (False, True):
            with tempfile.TemporaryDirectory() as tmp:
                results[release].append(await _measure(Path(tmp), writes, release=release))
    for index, what in enumerate(("write outside a turn", "read of an idle thread")):
        held = statistics.median(r[index] for r in results[False])
        released = statistics.median(r[index] for r in results[True])
        print(
            f"{what:24} held {held * 1e6:9.1f} us  released {released * 1e6:9.1f} us  "
            f"ratio {released / held:.2f}x"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--writes", type=int, default=300)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    anyio.run(_main, args.writes, args.runs)


if __name__ == "__main__":
    main()
