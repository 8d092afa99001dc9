"""Benchmark file checkpoints: what saving a file's old content costs a write.

    python tools/bench_checkpoints.py [--runs 30] [--kib 1 64 1024] [--files 200]

For each file size, ``write_file`` and ``edit_file`` run ``--runs`` times on
a real file through the tool host, once without checkpoints (no side-file
store, as before issue 13) and once with them (the old content saved as a
durable side file in a ``FileBlobStore`` before the change, kun as it is).
Each edit writes new content, so every checkpoint stores a new side file.
Prints the median milliseconds per call and the ratio checkpoints / plain,
both from this one run. Then times ``rewind --files`` putting back
``--files`` edited files (hash, plan, save what they hold, restore), without
and with its intent logged (durably) before the first change, as a ratio.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import anyio
import msgspec

from kun.contracts import events as ev
from kun.contracts.items import FileCheckpoint
from kun.contracts.threads import ThreadSettings
from kun.runtime.checkpoints import carry_out, prepare, restore
from kun.store.blobs import FileBlobStore
from kun.store.jsonl import JsonlEventStore
from kun.tools.base import ToolContext
from kun.tools.host import ToolHost, default_host


def _ctx(workspace: Path, blobs: FileBlobStore | None) -> ToolContext:
    save = None if blobs is None else blobs.put
    return ToolContext(
        workspace=workspace, thread_id="t", turn_id="u", call_id="c", save_side_file=save
    )


async def _median_ms(host: ToolHost, ctx: ToolContext, tool: str, size: int, runs: int) -> float:
    path = ctx.workspace / "f.txt"
    times = []
    for n in range(runs):
        body = f"{n:08d} head\n" + ("x" * 71 + "\n") * max(1, size // 72)
        path.write_text(body)
        if tool == "write_file":
            args: dict[str, object] = {"path": "f.txt", "content": body.replace("head", "tail")}
        else:
            args = {"path": "f.txt", "old_string": f"{n:08d} head", "new_string": "changed!!"}
        raw = msgspec.json.encode(args)
        start = time.perf_counter()
        out = await host.execute(tool, raw, ctx)
        times.append(time.perf_counter() - start)
        assert not out.is_error, out.output
    return statistics.median(times) * 1000


async def _sizes(runs: int, kibs: list[int]) -> None:
    host = default_host()
    print(f"{'tool':<11}{'size':>9}{'plain ms':>11}{'checkpoint ms':>15}{'ratio':>8}")
    for kib in kibs:
        for tool in ("write_file", "edit_file"):
            with tempfile.TemporaryDirectory() as tmp:
                ws = Path(tmp) / "ws"
                ws.mkdir()
                blobs = FileBlobStore(Path(tmp) / "blobs", "t")
                plain = await _median_ms(host, _ctx(ws, None), tool, kib * 1024, runs)
                saved = await _median_ms(host, _ctx(ws, blobs), tool, kib * 1024, runs)
            print(f"{tool:<11}{kib:>7}KB{plain:>11.2f}{saved:>15.2f}{saved / plain:>8.2f}")


async def _edited(ws: Path, blobs: FileBlobStore, files: int) -> list[FileCheckpoint]:
    host = default_host()
    ctx = _ctx(ws, blobs)
    points = []
    for n in range(files):
        (ws / f"f{n}.txt").write_text(f"{ws.name} {n}\n" + "line\n" * 2000)
        args = {
            "path": f"f{n}.txt",
            "old_string": "line",
            "new_string": "LINE",
            "replace_all": True,
        }
        out = await host.execute("edit_file", msgspec.json.encode(args), ctx)
        assert out.checkpoint is not None
        points.append(out.checkpoint)
    return points


async def _plain(tmp: Path, files: int) -> float:
    ws = tmp / "plain"
    ws.mkdir()
    blobs = FileBlobStore(tmp / "blobs", "t")
    points = await _edited(ws, blobs, files)
    start = time.perf_counter()
    done = restore(ws, blobs, points)
    took = time.perf_counter() - start
    assert len(done.restored) == files
    return took


async def _logged(tmp: Path, files: int) -> float:
    ws = tmp / "logged"
    ws.mkdir()
    blobs = FileBlobStore(tmp / "blobs", "t")
    points = await _edited(ws, blobs, files)
    async with JsonlEventStore(tmp / "home") as store:
        created = ev.ThreadCreated(seq=1, at=0, thread_id="t", settings=ThreadSettings())
        await store.append("t", [created], expected_seq=0)
        start = time.perf_counter()
        prepared = prepare(ws, blobs, points)
        planned, skipped = prepared.intent()
        intent = ev.FilesRestoreStarted(
            seq=2, at=0, thread_id="t", before_turn_id="u", planned=planned, skipped=skipped
        )
        await store.append("t", [intent], expected_seq=1)
        done = carry_out(ws, blobs, prepared)
        took = time.perf_counter() - start
    assert len(done.restored) == files
    return took


async def _restore(files: int, rounds: int = 3) -> None:
    """``restore`` as before the intent was logged, against the same work
    with a durable ``files_restore_started`` appended between the plan and
    the first change (what ``rewind --files`` does now); alternating, each
    on fresh files with their own side-file store, medians of ``rounds``."""
    plain: list[float] = []
    logged: list[float] = []
    for n in range(rounds):
        order = [(_plain, plain), (_logged, logged)]
        for run, times in order if n % 2 == 0 else order[::-1]:
            with tempfile.TemporaryDirectory() as tmp:
                times.append(await run(Path(tmp), files))
    p, g = statistics.median(plain), statistics.median(logged)
    print(f"rewind --files: {files} files of 10 KB put back in {p * 1000:.1f} ms")
    print(f"  with the intent logged first: {g * 1000:.1f} ms (ratio {g / p:.2f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--kib", type=int, nargs="+", default=[1, 64, 1024])
    parser.add_argument("--files", type=int, default=200)
    args = parser.parse_args()
    anyio.run(_sizes, args.runs, args.kib)
    anyio.run(_restore, args.files)


if __name__ == "__main__":
    main()
