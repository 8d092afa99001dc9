"""A symlink swapped between the check and the use does not escape.

Another process exchanges a file or directory of the workspace with a
symlink pointing outside, as fast as it can (``renameat2`` with
``RENAME_EXCHANGE``, so the name always exists), while the file tools use
the name in a loop. Before the tools
opened files relative to a descriptor of the workspace, dozens of a few
thousand calls read or wrote the outside file. Now none may.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.tools_host.support import call

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

ROUNDS = 1500
WRITE_ROUNDS = 600
"""Fewer: each write fsyncs twice. Before the fix, a few percent escaped."""

SWAPPER = """
import ctypes, os, sys
name, outside = sys.argv[1:3]
other = name + ".swap"
os.symlink(outside, other)
renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
AT_FDCWD, RENAME_EXCHANGE = -100, 2
for i in range(10**9):
    if renameat2(AT_FDCWD, name.encode(), AT_FDCWD, other.encode(), RENAME_EXCHANGE):
        raise OSError(ctypes.get_errno(), "renameat2")
    if i == 2:
        print("swapping", flush=True)
"""


@contextmanager
def swapping(path: Path, outside: Path) -> Iterator[None]:
    """A child process that, until the block ends, atomically exchanges
    ``path`` (a real file or directory inside the workspace) with a symlink
    of the same name pointing to ``outside``, again and again: a checker
    that resolved ``path`` to itself may then open the link."""
    child = subprocess.Popen(
        [sys.executable, "-c", SWAPPER, str(path), str(outside)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline() == "swapping\n"
        yield
    finally:
        child.kill()
        child.wait()
        if child.stdout is not None:
            child.stdout.close()


async def test_reads_through_a_swapped_file_link_stay_inside(ws: Path) -> None:
    outside = ws.parent / "outside"
    (ws / "link").write_text("inside\n")
    escapes = 0
    with swapping(ws / "link", outside / "secret.txt"):
        for _ in range(ROUNDS):
            result = await call("read_file", ws, path="link")
            escapes += "top secret" in result.output
    assert escapes == 0


async def test_writes_through_a_swapped_file_link_stay_inside(ws: Path) -> None:
    outside = ws.parent / "outside"
    (ws / "link").write_text("inside\n")
    with swapping(ws / "link", outside / "secret.txt"):
        for i in range(WRITE_ROUNDS):
            await call("write_file", ws, path="link", content=f"written {i}\n")
            if i % 2:
                await call("edit_file", ws, path="link", old_string="written", new_string="w")
    assert (outside / "secret.txt").read_text() == "top secret\n"


async def test_a_swapped_directory_link_is_not_followed_out(ws: Path) -> None:
    outside = ws.parent / "outside"
    (outside / "marker.txt").write_text("")
    (ws / "dir").mkdir()
    (ws / "dir" / "secret.txt").write_text("inside\n")
    escapes = 0
    with swapping(ws / "dir", outside):
        for i in range(ROUNDS):
            read = await call("read_file", ws, path="dir/secret.txt")
            escapes += "top secret" in read.output
            listing = await call("list_dir", ws, path="dir")
            escapes += "marker.txt" in listing.output
            await call("write_file", ws, path=f"dir/new{i % 3}.txt", content="x")
    assert escapes == 0
    assert sorted(p.name for p in outside.iterdir()) == ["marker.txt", "secret.txt"]
