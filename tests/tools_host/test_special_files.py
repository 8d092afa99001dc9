"""File tools act on regular files (and directories where that is their
job): a FIFO, which blocks whoever opens it, is refused or skipped, never
opened for reading or writing. The bound on each call is a liveness check:
before, each of these calls blocked forever."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from tests.tools_host.support import call

pytestmark = pytest.mark.anyio

LIVENESS_S = 5.0


@pytest.fixture
def fifo_ws(ws: Path) -> Path:
    os.mkfifo(ws / "pipe")
    (ws / "t.txt").write_text("needle\n")
    return ws


async def test_grep_over_a_tree_with_a_fifo_skips_it(fifo_ws: Path) -> None:
    with anyio.fail_after(LIVENESS_S):
        result = await call("grep", fifo_ws, pattern="needle")
    assert result.output == "t.txt:1: needle"


async def test_grep_of_a_fifo_is_refused(fifo_ws: Path) -> None:
    with anyio.fail_after(LIVENESS_S):
        result = await call("grep", fifo_ws, pattern="needle", path="pipe")
    assert result.code == "not_a_file"
    assert "pipe is a FIFO" in result.output


async def test_read_file_of_a_fifo_is_refused(fifo_ws: Path) -> None:
    with anyio.fail_after(LIVENESS_S):
        result = await call("read_file", fifo_ws, path="pipe")
    assert result.code == "not_a_file"
    assert "pipe is a FIFO" in result.output


async def test_write_file_to_a_fifo_is_refused_and_leaves_it(fifo_ws: Path) -> None:
    with anyio.fail_after(LIVENESS_S):
        result = await call("write_file", fifo_ws, path="pipe", content="x")
    assert result.code == "not_a_file"
    assert "pipe is a FIFO" in result.output and "regular files" in result.output
    assert (fifo_ws / "pipe").is_fifo()


async def test_edit_file_of_a_fifo_is_refused(fifo_ws: Path) -> None:
    with anyio.fail_after(LIVENESS_S):
        result = await call("edit_file", fifo_ws, path="pipe", old_string="a", new_string="b")
    assert result.code == "not_a_file"
    assert "pipe is a FIFO" in result.output


async def test_glob_lists_regular_files_only(fifo_ws: Path) -> None:
    with anyio.fail_after(LIVENESS_S):
        result = await call("glob", fifo_ws, pattern="*")
    assert result.output == "t.txt"


async def test_a_fifo_behind_an_inside_symlink_is_refused(fifo_ws: Path) -> None:
    (fifo_ws / "alias").symlink_to(fifo_ws / "pipe")
    with anyio.fail_after(LIVENESS_S):
        read = await call("read_file", fifo_ws, path="alias")
        write = await call("write_file", fifo_ws, path="alias", content="x")
    assert read.code == write.code == "not_a_file"
    assert (fifo_ws / "pipe").is_fifo()
