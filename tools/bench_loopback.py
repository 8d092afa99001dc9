"""Benchmark: kun's per-chunk overhead end to end, through a real loopback
socket, in one run.

The fake provider (``tools/fake_provider.py``, in its own process so the
server does not share the client's core) streams a chat-completions
response of N text deltas shaped like OpenAI's. The same stream is read by
two consumers on the same ``httpx.AsyncClient``:

* bare: reads the body with ``aiter_raw()`` and counts bytes, nothing else;
* kun: :class:`kun.model.sse.SSEParser` + the wire decoder on every read,
  bytes -> chunks, checked against the expected count.

Two server write patterns: one write per SSE event (a provider flushing
every token: the server sets the pace, so the question is whether kun
keeps up), and 64 KiB writes (the socket hands the client as much as it
can: the client sets the pace, so the difference is kun's own cost).

Run: ``python tools/bench_loopback.py [--chunks 20000] [--repeat 5]``.
"""

from __future__ import annotations

import argparse
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import httpx
import msgspec

from kun.contracts.model import (
    CompletedChunk,
    ModelStreamChunk,
    TextDeltaChunk,
    UsageChunk,
)
from kun.contracts.usage import UsageSnapshot
from kun.model.sse import SSEParser
from kun.model.wire import new_decoder
from kun.testing.fake_provider import FakeResponse
from kun.testing.wire import render_stream

SERVER = Path(__file__).resolve().parent / "fake_provider.py"
_WORDS = (
    "the of and to in is that for it as with was on be by this are or from at an which "
    "function return value error file path stream token model agent tool call result "
    "因为 所以 模型 工具 调用 结果 😀 — “quoted” café"
).split()

Consumer = Callable[[httpx.Response], Awaitable[int]]


def chunks(n: int, seed: int = 7) -> list[ModelStreamChunk]:
    rng = random.Random(seed)
    out: list[ModelStreamChunk] = [
        TextDeltaChunk(text="".join(" " + rng.choice(_WORDS) for _ in range(rng.randint(1, 3))))
        for _ in range(n)
    ]
    usage = UsageSnapshot(prompt_tokens=1200, completion_tokens=n, cache_hit_tokens=1000)
    out.append(UsageChunk(usage=usage, request_id="chatcmpl-bench", model="gpt-4o"))
    out.append(CompletedChunk())
    return out


async def bare(response: httpx.Response) -> int:
    size = 0
    async for piece in response.aiter_raw():
        size += len(piece)
    return size


async def kun(response: httpx.Response) -> int:
    parser, decoder = SSEParser(), new_decoder("chat_completions")
    count = 0
    async for piece in response.aiter_raw():
        count += len(decoder.feed_all(parser.feed(piece)))
    return count + len(decoder.feed_all(parser.flush())) + len(decoder.finish())


@contextmanager
def provider(response: FakeResponse) -> Iterator[str]:
    """Run the fake provider in its own process; yield its base URL."""
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "script.json"
        script.write_bytes(msgspec.json.encode([response]))
        command = [sys.executable, str(SERVER), "--port", "0", "--script", str(script)]
        with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as proc:
            try:
                assert proc.stdout is not None
                line = proc.stdout.readline()
                if not line.startswith("listening on "):
                    raise RuntimeError(f"fake provider did not start: {line!r}")
                yield line.split()[-1]
            finally:
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=10)


async def best(base_url: str, consume: Consumer, repeat: int, expect: int) -> float:
    """The best wall time of ``repeat`` requests, after one warm-up."""
    times: list[float] = []
    async with httpx.AsyncClient(base_url=base_url, timeout=60) as client:
        for attempt in range(repeat + 1):
            started = time.perf_counter()
            async with client.stream("POST", "chat/completions", json={"stream": True}) as r:
                got = await consume(r)
            elapsed = time.perf_counter() - started
            if got != expect:
                raise AssertionError(f"{consume.__name__}: got {got}, expected {expect}")
            if attempt:
                times.append(elapsed)
    return min(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    script = tuple(chunks(args.chunks))
    body = render_stream("chat_completions", script)
    n = args.chunks
    print(
        f"loopback chat_completions: {n} text deltas, {len(body) / 1e6:.1f} MB, "
        f"best of {args.repeat}"
    )
    print(f"{'server writes':<16}{'consumer':<12}{'ms':>9}{'us/chunk':>11}{'ratio':>8}")
    for label, response in (
        ("one per event", FakeResponse(chunks=script, per_event=True)),
        ("64 KiB", FakeResponse(chunks=script, pieces=(65536,))),
    ):
        with provider(response) as base_url:
            floor = anyio.run(best, base_url, bare, args.repeat, len(body))
            ours = anyio.run(best, base_url, kun, args.repeat, len(script))
        for name, seconds in (("bare", floor), ("kun", ours)):
            ratio = f"{seconds / floor:.2f}x"
            print(f"{label:<16}{name:<12}{seconds * 1e3:>9.1f}{seconds / n * 1e6:>11.2f}{ratio:>8}")
        print(f"{'':<16}kun overhead: {(ours - floor) / n * 1e6:+.2f} us/chunk")
    return 0


if __name__ == "__main__":
    sys.exit(main())
