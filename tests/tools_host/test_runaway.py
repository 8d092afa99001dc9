"""A runaway search never freezes the loop: a regex that backtracks
exponentially in Python's ``re`` and a glob with a dozen ``**/`` finish in
linear time, and an abort during a search ends the call at once.

The time bounds here are liveness checks, generous by an order of magnitude:
before searches ran in a killable, linear-time engine, the pathological
inputs below held the GIL for 12 s or more, so the loop could not even
deliver the cancellation.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import anyio
import pytest

from tests.tools_host.support import call

pytestmark = pytest.mark.anyio

LIVENESS_S = 5.0
"""Seconds a search on these inputs may take: a bound that only a hung or
backtracking search exceeds (the linear engine takes milliseconds)."""

CANCEL_S = 1.5
"""Seconds between an abort and the call's end, generously above the
issue's "within a second" so a loaded machine does not fail it."""

EVIL_REGEX = "(a+)+$"
EVIL_LINE = "a" * 27 + "!"
"""``(a+)+$`` against this line takes about 12 s in Python's ``re`` (each
extra ``a`` doubles it); a linear-time engine answers at once."""

EVIL_GLOB = "**/" * 12 + "x"


def deep_tree(root: Path, depth: int = 20) -> None:
    """A chain of ``depth`` directories with a file at each level, none named
    ``x``: every file makes a backtracking glob matcher try every way to split
    its path among the ``**/``."""
    d = root
    for i in range(depth):
        d = d / f"d{i}"
        d.mkdir()
        (d / "y").write_text("")


async def test_pathological_regex_is_linear(ws: Path) -> None:
    (ws / "a.txt").write_text(f"{EVIL_LINE}\nplain\n")
    with anyio.fail_after(LIVENESS_S):
        result = await call("grep", ws, pattern=EVIL_REGEX)
    assert result.output == "No matches."
    (ws / "b.txt").write_text("a" * 40 + "\n")
    with anyio.fail_after(LIVENESS_S):
        hit = await call("grep", ws, pattern=EVIL_REGEX, path="b.txt")
    assert hit.output == "b.txt:1: " + "a" * 40


async def test_glob_with_many_double_stars_is_bounded(ws: Path) -> None:
    deep_tree(ws)
    with anyio.fail_after(LIVENESS_S):
        result = await call("glob", ws, pattern=EVIL_GLOB)
    assert result.output == f"No files match {EVIL_GLOB!r}."
    with anyio.fail_after(LIVENESS_S):
        found = await call("glob", ws, pattern="**/" * 12 + "y")
    assert len(found.output.splitlines()) == 20


async def _cancel_after_start(name: str, ws: Path, **args: object) -> float:
    """Start a call, abort it once it is surely running, and return the
    seconds from the abort to the call's end."""
    cancelled_at = 0.0
    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: call(name, ws, **args))
            await anyio.sleep(0.3)
            cancelled_at = time.monotonic()
            tg.cancel_scope.cancel()
    return time.monotonic() - cancelled_at


async def test_abort_during_a_runaway_grep_ends_it_within_a_second(ws: Path) -> None:
    for i in range(20):
        (ws / f"a{i}.txt").write_text(f"{EVIL_LINE}\n" * 50)
    elapsed = await _cancel_after_start("grep", ws, pattern=EVIL_REGEX)
    assert elapsed < CANCEL_S


SLOW_BUT_LINEAR = r"\b\w+\b\s\b\w+\b$"
"""Unicode word boundaries keep ripgrep off its fast DFA: about 8 MB/s, so
the files below keep it busy for seconds, long enough to abort it mid-run."""


def rg_children() -> list[int]:
    """Live ``rg`` processes whose parent is this test process."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        name = text[text.index("(") + 1 : text.rindex(")")]
        state, ppid = text.rsplit(")", 1)[1].split()[:2]
        if name == "rg" and int(ppid) == os.getpid() and state != "Z":
            found.append(int(stat.parent.name))
    return found


@pytest.mark.slow
async def test_abort_during_a_long_search_kills_it(ws: Path) -> None:
    block = ("héllo wörld " * 8 + "\n").encode() * 60_000
    for i in range(6):
        (ws / f"t{i}.txt").write_bytes(block)
    elapsed = await _cancel_after_start("grep", ws, pattern=SLOW_BUT_LINEAR)
    assert elapsed < CANCEL_S
    assert rg_children() == []


async def test_abort_during_a_runaway_glob_ends_it_within_a_second(ws: Path) -> None:
    deep_tree(ws, depth=24)
    elapsed = await _cancel_after_start("glob", ws, pattern=EVIL_GLOB)
    assert elapsed < CANCEL_S
