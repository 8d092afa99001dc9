"""read_file reads in bounded chunks: a file that is one enormous line costs
memory in proportion to the output cap, not to the file."""

from __future__ import annotations

import tracemalloc
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from kun.tools.builtin import read_file as read_file_module
from tests.tools_host.support import call

pytestmark = pytest.mark.anyio

BIG = 64 * 1024 * 1024
"""The one-line file: big enough that reading it whole shows in the peak,
small enough to write in a blink."""

PEAK_BOUND = 8 * 1024 * 1024
"""What a bounded reader may allocate: chunks and the kept prefix of a line
(a few hundred KB), with room for the host's own allocations."""


def one_line_file(path: Path, size: int, tail: bytes = b"") -> None:
    chunk = b"x" * (1024 * 1024)
    with path.open("wb") as f:
        for _ in range(size // len(chunk)):
            f.write(chunk)
        f.write(tail)


async def peak_of(coro_fn: Callable[[], Awaitable[None]]) -> int:
    """The peak of traced allocations (every thread's) while ``coro_fn`` runs."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        await coro_fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.slow
async def test_one_huge_line_is_read_in_bounded_memory(ws: Path) -> None:
    one_line_file(ws / "huge.txt", BIG, b"\nsecond line\n")
    results = []

    async def read() -> None:
        results.append(await call("read_file", ws, path="huge.txt"))

    peak = await peak_of(read)
    (result,) = results
    assert peak < PEAK_BOUND
    first, note = result.output.splitlines()
    assert first.startswith("1\t" + "x" * read_file_module.MAX_LINE_CHARS + "...")
    assert "[line cut at 2000 characters; it is longer than the 8 MB" in first
    assert "continue with start_line=2" in note


@pytest.mark.slow
async def test_lines_after_a_huge_line_are_reachable(ws: Path) -> None:
    one_line_file(ws / "huge.txt", BIG, b"\nsecond line\nthird\n")
    results = []

    async def read() -> None:
        results.append(await call("read_file", ws, path="huge.txt", start_line=2))

    peak = await peak_of(read)
    assert peak < PEAK_BOUND
    assert results[0].output == "2\tsecond line\n3\tthird\n"
