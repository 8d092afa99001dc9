"""Benchmark file checkpoints: what saving a file's old content costs a write.

    python tools/bench_checkpoints.py [--runs 30] [--kib 1 64 1024] [--files 200]

For each file size, ``write_file`` and ``edit_file`` run ``--runs`` times on
a real file through the tool host, once without checkpoints (no side-file
store, as before issue 13) and once with them (the old content saved as a
durable side file in a ``FileBlobStore`` before the change, kun as it is).
Each edit writes new content, so every checkpoint stores a new side file.
Prints the median milliseconds per call and the ratio checkpoints / plain,
both from this one run. Then times ``rewind --files`` putting back
``--files`` edited files (hash, plan, save what they hold, restore).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import anyio
import msgspec

from kun.runtime.checkpoints import checkpoints_of, restore
from kun.store.blobs import FileBlobStore
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


async def _restore(files: int) -> None:
    host = default_host()
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        ws.mkdir()
        blobs = FileBlobStore(Path(tmp) / "blobs", "t")
        ctx = _ctx(ws, blobs)
        points = []
        for n in range(files):
            (ws / f"f{n}.txt").write_text("line\n" * 2000)
            args = {
                "path": f"f{n}.txt",
                "old_string": "line",
                "new_string": "LINE",
                "replace_all": True,
            }
            out = await host.execute("edit_file", msgspec.json.encode(args), ctx)
            assert out.checkpoint is not None
            points.append(out.checkpoint)
        start = time.perf_counter()
        done = restore(ws, blobs, points)
        took = time.perf_counter() - start
    assert len(done.restored) == files and checkpoints_of(()) == []
    print(f"rewind --files: {files} files of 10 KB put back in {took * 1000:.1f} ms")


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
