"""The diff a file write would make (at an approval) and made (in its
result): new file, overwrite, edit, and the cases with no diff to show."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from kun.tools.preview import (
    MAX_DIFF_LINES,
    MAX_SOURCE_BYTES,
    change_diff,
    is_note,
    proposed_diff,
    summary,
)
from tests.tools_host.support import call

pytestmark = pytest.mark.anyio


def _args(**fields: object) -> bytes:
    return msgspec.json.encode(fields)


def test_a_new_file_is_a_diff_from_dev_null(tmp_path: Path) -> None:
    diff = proposed_diff(tmp_path, "write_file", _args(path="a.py", content="x = 1\n"))
    assert diff.splitlines() == ["--- /dev/null", "+++ b/a.py", "@@ -0,0 +1 @@", "+x = 1"]
    assert not (tmp_path / "a.py").exists()


def test_an_overwrite_shows_removed_and_added_lines(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("one\ntwo\nthree\n")
    diff = proposed_diff(tmp_path, "write_file", _args(path="a.py", content="one\n2\nthree"))
    lines = diff.splitlines()
    assert lines[:2] == ["--- a/a.py", "+++ b/a.py"]
    assert "-two" in lines and "+2" in lines and "-three" in lines and "+three" in lines
    assert lines[-1] == "\\ No newline at end of file"


def test_an_edit_is_previewed_as_the_tool_would_make_it(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_bytes(b"a\r\nb\r\nc\r\n")
    diff = proposed_diff(
        tmp_path, "edit_file", _args(path="a.py", old_string="a\nb", new_string="a\nB")
    )
    assert diff.split("\n")[3:] == [" a", "-b", "+B", " c"]
    missing = proposed_diff(
        tmp_path, "edit_file", _args(path="a.py", old_string="zzz", new_string="y")
    )
    assert missing.startswith("(the edit will fail: old_string was not found")
    absent = proposed_diff(
        tmp_path, "edit_file", _args(path="b.py", old_string="a", new_string="b")
    )
    assert absent == "(no diff: b.py does not exist; the edit will fail)"


def test_binary_huge_outside_and_other_tools_give_a_note_or_nothing(tmp_path: Path) -> None:
    (tmp_path / "bin").write_bytes(b"\x00\x01")
    (tmp_path / "big").write_bytes(b"x\n" * MAX_SOURCE_BYTES)
    (tmp_path / "dir").mkdir()
    write = "write_file"
    assert is_note(proposed_diff(tmp_path, write, _args(path="bin", content="t")))
    assert "binary" in proposed_diff(tmp_path, write, _args(path="bin", content="t"))
    assert "over 1024 KB" in proposed_diff(tmp_path, write, _args(path="big", content="t"))
    assert "a directory" in proposed_diff(tmp_path, write, _args(path="dir", content="t"))
    outside = proposed_diff(tmp_path, write, _args(path="../x", content="t"))
    assert outside.startswith("(no diff: The path '../x' resolves to")
    assert proposed_diff(tmp_path, "bash", _args(command="ls")) == ""
    assert proposed_diff(tmp_path, write, b"not json") == ""
    same = proposed_diff(tmp_path, write, _args(path="bin", content="\x00\x01"))
    assert is_note(same)


def test_a_long_diff_is_capped_and_says_so() -> None:
    after = "".join(f"line {i}\n" for i in range(5000)).encode()
    diff = change_diff("a.txt", None, after)
    lines = diff.splitlines()
    assert len(lines) == MAX_DIFF_LINES + 1
    assert lines[-1] == f"... ({5003 - MAX_DIFF_LINES} more diff lines not shown)"
    assert change_diff("a", b"same", b"same") == "(no change: a already holds this content)"


async def test_the_tools_results_carry_the_change(ws: Path) -> None:
    created = await call("write_file", ws, path="a.txt", content="one\n")
    assert created.diff.startswith("--- /dev/null\n+++ b/a.txt")
    replaced = await call("write_file", ws, path="a.txt", content="two\n")
    assert replaced.diff.splitlines()[-2:] == ["-one", "+two"]
    edited = await call("edit_file", ws, path="a.txt", old_string="two", new_string="three")
    assert edited.diff.splitlines()[-2:] == ["-two", "+three"]
    assert "diff" not in edited.output and "---" not in edited.output


def test_the_summary_names_the_call() -> None:
    assert summary("write_file", _args(path="a.py", content="x" * 500)) == "write_file a.py"
    assert summary("bash", _args(command="git  status\n-s")) == "bash: git status -s"
    assert summary("grep", b'{"pattern": "x"}') == 'grep {"pattern": "x"}'
    assert len(summary("grep", b"x" * 500)) == 200
