"""Benchmark attachments as side files: what a step's request costs when
its images come from the thread's side files instead of their paths.

    python tools/bench_attachments.py [--images 4] [--kib 512] [--steps 5] [--runs 7]

A history holds one user message with ``--images`` PNG files of ``--kib``
KiB each. For each of ``--steps`` steps of a turn the request is built and
encoded for a model that takes images (chat completions): "path" is kun
before side files held attachments (the codec reads each file on every
step), "side files" is kun now (the turn reads and checks each side file
once, then reuses it). Also prints the one-off cost of keeping the images
when the message is recorded (read, hash, write and fsync each side file).
Medians over ``--runs``; ratios are side files / path from this one run.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import zlib
from collections.abc import Sequence
from pathlib import Path

import anyio

from kun.contracts.capabilities import ModelCapabilities
from kun.contracts.items import Attachment, Item, UserMessage
from kun.contracts.model import ModelRequest
from kun.model.request.images import read_attachment
from kun.model.request_codec import codec_for
from kun.runtime.sidefiles import SideFiles, keep_attachments
from kun.store.blobs import FileBlobStore

IMAGES = ModelCapabilities(known=True, input_modalities=("text", "image"))


def _png(size: int, seed: int) -> bytes:
    """A PNG signature and header followed by ``size`` incompressible bytes
    (the codec sniffs the type; nothing decodes the pixels)."""
    body = b"".join(
        zlib.crc32(bytes([seed, n % 256, n // 256 % 256])).to_bytes(4, "big")
        for n in range(size // 4 + 1)
    )
    return b"\x89PNG\r\n\x1a\n" + body[:size]


def _turn(history: Sequence[Item], side: SideFiles | None, steps: int) -> float:
    codec = codec_for("chat_completions", capabilities=IMAGES, load_attachment=read_attachment)
    start = time.perf_counter()
    for _ in range(steps):
        items = list(history) if side is None else side.resolve(history)
        request = ModelRequest(system_prompt="bench", history=tuple(items))
        codec.encode(request, model="m", stream=True, max_tokens=None, reasoning_effort=None)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--images", type=int, default=4)
    parser.add_argument("--kib", type=int, default=512)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        given = []
        for n in range(args.images):
            path = root / f"image{n}.png"
            path.write_bytes(_png(args.kib * 1024, n))
            given.append(Attachment(name=path.name, mime_type="image/png", path=str(path)))
        keep_s = []
        kept: tuple[Attachment, ...] = ()
        for run in range(args.runs):
            blobs = FileBlobStore(root / f"blobs{run}", "thr_bench")
            start = time.perf_counter()
            kept = anyio.run(keep_attachments, blobs, given)
            keep_s.append(time.perf_counter() - start)
        legacy = [UserMessage(id="msg_1", text="look", attachments=tuple(given))]
        held = [UserMessage(id="msg_1", text="look", attachments=kept)]
        blobs = FileBlobStore(root / f"blobs{args.runs - 1}", "thr_bench")
        path_s = [_turn(legacy, None, args.steps) for _ in range(args.runs)]
        side_s = [_turn(held, SideFiles(blobs), args.steps) for _ in range(args.runs)]
    path, side, keep = (statistics.median(s) for s in (path_s, side_s, keep_s))
    total = args.images * args.kib
    print(f"{args.images} images of {args.kib} KiB ({total:,} KiB), a turn of {args.steps} steps")
    print(f"path:       {path * 1e3:8.2f} ms per turn ({path / args.steps * 1e3:.2f} ms per step)")
    print(f"side files: {side * 1e3:8.2f} ms per turn ({side / args.steps * 1e3:.2f} ms per step)")
    print(f"keeping the images when recorded: {keep * 1e3:.2f} ms once")
    print(f"side files / path: {side / path:.3f} per turn")


if __name__ == "__main__":
    main()
