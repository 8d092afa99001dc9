"""Benchmark export and import over HTTP against the same work done locally.

    python tools/bench_portable_http.py [--turns 500] [--blob-mb 64] [--runs 3]

Builds a thread of ``--turns`` turns plus one incompressible side file of
``--blob-mb`` MB, serves its home with the real app (uvicorn on 127.0.0.1,
in this process), then times, in this one run: ``export_thread`` +
``import_bundle`` on the disk (the baseline) against ``KunClient``'s
``export_thread`` + ``import_thread`` through the server (the same work
plus the transfer both ways). Prints the medians and the ratio http / local,
and how much the process's peak memory grew during the HTTP runs against the
bundle's size: the bundle is streamed both ways, so the growth must stay far
below it (one copy held would be a ratio near 1, two near 2).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import resource
import socket
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import bench_portable

from kun.client import KunClient
from kun.model.scripted import ScriptedModelClient
from kun.portable.bundle import export_thread
from kun.portable.unbundle import import_bundle
from kun.server.app import create_app
from kun.server.backend import backend_over
from kun.server.runner import server_for
from kun.store.paths import blobs_dir

THREAD = bench_portable.THREAD
READY_SECONDS = 20.0


def _thread(home: Path, turns: int, blob_mb: int) -> int:
    """``bench_portable``'s thread, with a side file of ``blob_mb`` MB."""
    _side_file(blobs_dir(home, THREAD), blob_mb)
    return bench_portable._thread(home, turns)


def _side_file(folder: Path, megabytes: int) -> None:
    """An incompressible side file named by its SHA-256, written a MB at a
    time so building it does not raise the peak memory measured later."""
    folder.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    temp = folder / "building"
    with open(temp, "wb") as file:
        for _ in range(megabytes):
            chunk = os.urandom(1024 * 1024)
            digest.update(chunk)
            file.write(chunk)
    temp.rename(folder / digest.hexdigest())


def _median(runs: int, body: Callable[[int], object]) -> float:
    times = []
    for run in range(runs):
        start = time.perf_counter()
        body(run)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _peak_mb() -> float:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


@asynccontextmanager
async def serving(home: Path) -> AsyncIterator[str]:
    app = create_app(lambda: backend_over(home, ScriptedModelClient([])))
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = server_for(app, "127.0.0.1", port, log_level="warning")
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve, [sock])
        with anyio.fail_after(READY_SECONDS):
            while True:  # uvicorn sets a flag, no event
                if server.started:
                    break
                await anyio.sleep(0.01)
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            server.should_exit = True
    sock.close()


async def _measure(root: Path, home: Path, runs: int) -> tuple[float, float, float, float]:
    """Median seconds over HTTP, the peak memory growth (MB) while doing it,
    the growth from then holding one copy of the bundle (which shows the
    measure sees a copy), and the median seconds on the disk."""
    async with serving(home) as url:

        def over_http(run: int) -> None:
            with KunClient(url) as client:
                out = root / f"h{run}.kun.tar.gz"
                client.export_thread(THREAD, out)
                client.import_thread(out, as_id=f"thr_http{run}")

        before = _peak_mb()
        http_s = await anyio.to_thread.run_sync(_median, runs, over_http)
        grown = _peak_mb() - before
    held = (root / "h0.kun.tar.gz").read_bytes()  # the yardstick: one whole copy
    copy = _peak_mb() - before - grown
    del held

    def on_disk(run: int) -> None:
        out = root / f"l{run}.kun.tar.gz"
        export_thread(home, THREAD, out)
        import_bundle(home, out, as_id=f"thr_local{run}")

    return http_s, grown, copy, _median(runs, on_disk)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=500)
    parser.add_argument("--blob-mb", type=int, default=64)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        home = root / "home"
        events = _thread(home, args.turns, args.blob_mb)
        http_s, grown, copy, local_s = anyio.run(_measure, root, home, args.runs)
        bundle_mb = (root / "h0.kun.tar.gz").stat().st_size / (1024 * 1024)
    print(f"thread: {events} events, bundle {bundle_mb:.1f} MB")
    print(f"local export+import {local_s:.3f}s  http {http_s:.3f}s  ratio {http_s / local_s:.2f}")
    print(
        f"peak memory grew {grown:.1f} MB over HTTP for a {bundle_mb:.1f} MB bundle "
        f"(ratio {grown / bundle_mb:.2f}); holding one copy grew it {copy:.1f} MB "
        f"(ratio {copy / bundle_mb:.2f})"
    )


if __name__ == "__main__":
    main()
