"""write_file and edit_file."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import anyio
import pytest

from kun.tools.builtin import edit_file as edit_file_module
from tests.tools_host.support import call

pytestmark = pytest.mark.anyio


async def test_write_creates_parents_and_reports_bytes(ws: Path) -> None:
    result = await call("write_file", ws, path="a/b/c.txt", content="héllo\n")
    assert not result.is_error
    assert result.output == "Wrote 7 bytes to a/b/c.txt (created it)."
    assert (ws / "a/b/c.txt").read_text() == "héllo\n"
    again = await call("write_file", ws, path="a/b/c.txt", content="")
    assert again.output == "Wrote 0 bytes to a/b/c.txt (replaced its content)."
    assert (ws / "a/b/c.txt").read_text() == ""


async def test_write_onto_a_directory_is_refused(ws: Path) -> None:
    (ws / "d").mkdir()
    result = await call("write_file", ws, path="d", content="x")
    assert result.code == "not_a_file"


async def test_write_through_an_inside_symlink_writes_the_target(ws: Path) -> None:
    (ws / "real.txt").write_text("old")
    (ws / "alias").symlink_to(ws / "real.txt")
    await call("write_file", ws, path="alias", content="new")
    assert (ws / "real.txt").read_text() == "new"
    assert (ws / "alias").is_symlink()


async def test_edit_replaces_a_unique_match(ws: Path) -> None:
    (ws / "f.py").write_text("a = 1\nb = 2\nc = 3\n")
    result = await call("edit_file", ws, path="f.py", old_string="b = 2", new_string="b = 20")
    assert not result.is_error
    assert result.output == "Edited f.py: replaced 1 occurrence (at line 2)."
    assert (ws / "f.py").read_text() == "a = 1\nb = 20\nc = 3\n"


async def test_edit_missing_match_says_so(ws: Path) -> None:
    (ws / "f.py").write_text("    indented\n")
    result = await call("edit_file", ws, path="f.py", old_string="  Indented", new_string="x")
    assert result.is_error and result.code == "edit_no_match"
    assert "0 matches" in result.output and "exactly" in result.output
    assert (ws / "f.py").read_text() == "    indented\n"


async def test_edit_ambiguous_match_counts_matches(ws: Path) -> None:
    (ws / "f.py").write_text("x = 1\nx = 1\nx = 1\n")
    result = await call("edit_file", ws, path="f.py", old_string="x = 1", new_string="y")
    assert result.is_error and result.code == "edit_ambiguous"
    assert "matches 3 places" in result.output and "replace_all" in result.output
    assert (ws / "f.py").read_text() == "x = 1\nx = 1\nx = 1\n"


async def test_edit_replace_all(ws: Path) -> None:
    (ws / "f.py").write_text("keep\nx = 1\nx = 1\n")
    result = await call(
        "edit_file", ws, path="f.py", old_string="x = 1", new_string="y = 2", replace_all=True
    )
    assert result.output == "Edited f.py: replaced 2 occurrences (first at line 2)."
    assert (ws / "f.py").read_text() == "keep\ny = 2\ny = 2\n"


async def test_edit_multiline_on_crlf_file_keeps_crlf(ws: Path) -> None:
    (ws / "f.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    result = await call("edit_file", ws, path="f.txt", old_string="one\ntwo", new_string="1\n2")
    assert not result.is_error
    assert (ws / "f.txt").read_bytes() == b"1\r\n2\r\nthree\r\n"


async def test_edit_refusals(ws: Path) -> None:
    (ws / "blob").write_bytes(b"a\x00b")
    (ws / "latin").write_bytes("café".encode("latin-1"))
    (ws / "f").write_text("same")
    assert (await call("edit_file", ws, path="nope", old_string="a", new_string="b")).code == (
        "not_found"
    )
    assert (await call("edit_file", ws, path="blob", old_string="a", new_string="b")).code == (
        "binary_file"
    )
    assert (await call("edit_file", ws, path="latin", old_string="a", new_string="b")).code == (
        "binary_file"
    )
    same = await call("edit_file", ws, path="f", old_string="same", new_string="same")
    assert same.code == "invalid_arguments"
    empty = await call("edit_file", ws, path="f", old_string="", new_string="x")
    assert empty.code == "invalid_arguments" and "old_string" in empty.output


async def test_edit_refuses_a_file_too_large_to_hold(ws: Path) -> None:
    with (ws / "huge.txt").open("wb") as f:
        f.truncate(edit_file_module.MAX_EDIT_BYTES + 1)
    result = await call("edit_file", ws, path="huge.txt", old_string="a", new_string="b")
    assert result.code == "file_too_large"
    assert "use bash" not in result.output and "with bash" in result.output


async def test_write_keeps_the_mode_and_leaves_no_temporary_file(ws: Path) -> None:
    script = ws / "run.sh"
    script.write_text("echo old\n")
    script.chmod(0o751)
    await call("write_file", ws, path="run.sh", content="echo new\n")
    await call("edit_file", ws, path="run.sh", old_string="new", new_string="newer")
    assert script.read_text() == "echo newer\n"
    assert stat.S_IMODE(script.stat().st_mode) == 0o751
    assert os.listdir(ws) == ["run.sh"]


async def test_a_failed_write_leaves_the_old_content(ws: Path) -> None:
    """A write cut short (here by the file-size limit, as a full disk would)
    fails readably and leaves the file as it was, with no temporary file:
    before, the file was truncated first and left half-written."""
    (ws / "f.txt").write_text("old content\n")
    child = f"""
import resource, signal, anyio, msgspec
from pathlib import Path
from kun.tools import ToolContext, default_host
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
ctx = ToolContext(workspace=Path({str(ws)!r}), thread_id="t", turn_id="u", call_id="c")
args = msgspec.json.encode({{"path": "f.txt", "content": "new " * 10_000}})
result = anyio.run(default_host().execute, "write_file", args, ctx)
print(result.code)
"""
    done = await anyio.run_process([sys.executable, "-c", child])
    assert done.stdout.decode().strip() == "tool_execution_failed"
    assert (ws / "f.txt").read_text() == "old content\n"
    assert os.listdir(ws) == ["f.txt"]
