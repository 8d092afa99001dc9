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
from pathlib import Path

import anyio
import pytest

from kun.contracts import events as ev
from kun.model.scripted import text_reply, tool_reply
from kun.store.jsonl import JsonlEventStore
from tests.runtime.support import harness
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
    """A chain of ``depth`` directories with three files at the bottom, none
    named ``x``: for each, a backtracking glob matcher tries every way to
    split its path among the ``**/`` (seconds per file at this depth)."""
    d = root.joinpath(*(f"d{i}" for i in range(depth)))
    d.mkdir(parents=True)
    for name in ("y1", "y2", "y3"):
        (d / name).write_text("")


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
        found = await call("glob", ws, pattern="**/" * 12 + "y?")
    assert len(found.output.splitlines()) == 3


async def _cancel_after_start(name: str, ws: Path, **args: object) -> float:
    """Start a call, abort it 0.3 s later, and return the seconds from the
    moment the abort was due to the call's end (a frozen loop delays the
    abort itself, so the clock starts when it was due)."""
    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: call(name, ws, **args))
            due = anyio.current_time() + 0.3
            await anyio.sleep_until(due)
            tg.cancel_scope.cancel()
    return anyio.current_time() - due


async def test_abort_during_a_runaway_grep_ends_it_within_a_second(ws: Path) -> None:
    (ws / "a.txt").write_text(f"{EVIL_LINE}\n")
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
    deep_tree(ws)
    elapsed = await _cancel_after_start("glob", ws, pattern=EVIL_GLOB)
    assert elapsed < CANCEL_S


@pytest.mark.slow
async def test_interrupting_a_turn_during_a_runaway_grep_aborts_it_at_once(
    tmp_path: Path,
) -> None:
    """The whole path of a Ctrl-C: the turn is interrupted while its grep
    runs, and ``turn_aborted`` is recorded within the bound. The pattern is
    both kinds of runaway: it backtracks exponentially in Python's ``re`` on
    the short line, and keeps ripgrep busy for seconds on the long file."""
    pattern = f"{EVIL_REGEX}|{SLOW_BUT_LINEAR}"
    script = [tool_reply("grep", {"pattern": pattern}), text_reply("done")]
    async with harness(tmp_path, script) as h:
        (h.workspace / "evil.txt").write_text(f"{EVIL_LINE}\n")
        block = ("héllo wörld " * 8 + "\n").encode() * 60_000
        for i in range(6):
            (h.workspace / f"t{i}.txt").write_bytes(block)
        turn_id = await h.service.start_turn(h.thread_id, "search")
        with anyio.fail_after(60):
            async for event in h.service.recorder.subscribe(h.thread_id):
                if isinstance(event, ev.ToolCallStarted):
                    break
            due = anyio.current_time() + 0.3
            await anyio.sleep_until(due)
            await h.service.interrupt_turn(h.thread_id, turn_id)
            elapsed = anyio.current_time() - due
        assert h.turn(turn_id).status == "aborted"
        assert isinstance(list(JsonlEventStore(h.home).read(h.thread_id))[-1], ev.TurnAborted)
        assert elapsed < CANCEL_S
        assert rg_children() == []
