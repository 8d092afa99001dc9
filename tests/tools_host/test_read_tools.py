"""read_file, list_dir, glob and grep on a real workspace."""

from __future__ import annotations

from pathlib import Path

import pytest

from kun.tools import Workspace
from kun.tools.builtin import glob as glob_module
from kun.tools.builtin import grep as grep_module
from kun.tools.builtin import list_dir as list_dir_module
from kun.tools.builtin import read_file as read_file_module
from tests.tools_host.support import call

pytestmark = pytest.mark.anyio


def lines(n: int) -> str:
    return "".join(f"line {i}\n" for i in range(1, n + 1))


# read_file


async def test_read_whole_file_numbers_lines(ws: Path) -> None:
    (ws / "a.txt").write_text("alpha\nbeta\r\ngamma")
    result = await call("read_file", ws, path="a.txt")
    assert not result.is_error
    assert result.output == "1\talpha\n2\tbeta\n3\tgamma\n"


@pytest.mark.parametrize(
    ("start", "end", "expected"),
    [
        (2, 4, [2, 3, 4]),
        (9, None, [9, 10]),
        (None, 2, [1, 2]),
        (5, 5, [5]),
        (8, 50, [8, 9, 10]),
    ],
)
async def test_read_line_ranges(
    ws: Path, start: int | None, end: int | None, expected: list[int]
) -> None:
    (ws / "f.txt").write_text(lines(10))
    args: dict[str, object] = {"path": "f.txt"}
    if start is not None:
        args["start_line"] = start
    if end is not None:
        args["end_line"] = end
    result = await call("read_file", ws, **args)
    assert result.output == "".join(f"{i}\tline {i}\n" for i in expected)


async def test_read_range_past_the_end_and_empty_file(ws: Path) -> None:
    (ws / "f.txt").write_text(lines(3))
    (ws / "empty.txt").write_text("")
    past = await call("read_file", ws, path="f.txt", start_line=7)
    assert not past.is_error
    assert "has 3 lines" in past.output and "start_line 7" in past.output
    empty = await call("read_file", ws, path="empty.txt")
    assert empty.output == "(empty.txt is empty)"


async def test_read_end_before_start_is_invalid(ws: Path) -> None:
    (ws / "f.txt").write_text(lines(3))
    result = await call("read_file", ws, path="f.txt", start_line=3, end_line=2)
    assert result.code == "invalid_arguments"
    assert "end_line (2) is before start_line (3)" in result.output


async def test_read_is_capped_with_a_note(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(read_file_module, "MAX_OUTPUT_BYTES", 100)
    (ws / "big.txt").write_text(lines(100))
    result = await call("read_file", ws, path="big.txt")
    body, note = result.output.rsplit("\n", 1)
    assert len(body.encode()) <= 100
    last = int(body.splitlines()[-1].split("\t")[0])
    assert note.startswith("[output cut")
    assert f"after line {last}" in note
    assert f"continue with start_line={last + 1}" in note


async def test_read_long_line_is_clipped(ws: Path) -> None:
    (ws / "long.txt").write_text("x" * 5000 + "\n")
    result = await call("read_file", ws, path="long.txt")
    assert "[line cut at 2000 of 5000 characters]" in result.output
    assert len(result.output) < 2100


async def test_read_binary_is_refused_readably(ws: Path) -> None:
    (ws / "blob.bin").write_bytes(b"abc\x00def" * 10)
    result = await call("read_file", ws, path="blob.bin")
    assert result.is_error and result.code == "binary_file"
    assert "blob.bin is a binary file (70 bytes)" in result.output


async def test_read_image_is_attached(ws: Path) -> None:
    data = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32
    (ws / "pic.png").write_bytes(data)
    result = await call("read_file", ws, path="pic.png")
    assert not result.is_error
    (attachment,) = result.attachments
    assert attachment.mime_type == "image/png"
    assert attachment.size_bytes == len(data)
    assert attachment.path == str((ws / "pic.png").resolve())


async def test_read_non_utf8_text_is_replaced_not_refused(ws: Path) -> None:
    (ws / "latin.txt").write_bytes("café\n".encode("latin-1"))
    result = await call("read_file", ws, path="latin.txt")
    assert result.output == "1\tcaf\ufffd\n"


async def test_read_splits_on_newline_only(ws: Path) -> None:
    (ws / "u.txt").write_text("a\u2028b\x85c\nd\n")
    result = await call("read_file", ws, path="u.txt")
    assert result.output == "1\ta\u2028b\x85c\n2\td\n"


async def test_read_missing_and_directory(ws: Path) -> None:
    (ws / "d").mkdir()
    missing = await call("read_file", ws, path="nope.txt")
    assert missing.code == "not_found" and "nope.txt does not exist" in missing.output
    directory = await call("read_file", ws, path="d")
    assert directory.code == "not_a_file"


# list_dir


async def test_list_dir_sorted_with_markers(ws: Path) -> None:
    (ws / "b.txt").write_text("")
    (ws / "a").mkdir()
    (ws / "c").mkdir()
    (ws / "c" / "inner.txt").write_text("")
    (ws / "ln").symlink_to(ws / "b.txt")
    assert (await call("list_dir", ws)).output == "a/\nb.txt\nc/\nln@"
    assert (await call("list_dir", ws, path="c")).output == "inner.txt"
    assert (await call("list_dir", ws, path="a")).output == "(a is empty)"


async def test_list_dir_capped(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(list_dir_module, "MAX_ENTRIES", 3)
    for i in range(5):
        (ws / f"f{i}").write_text("")
    result = await call("list_dir", ws)
    assert result.output.splitlines() == ["f0", "f1", "f2", "[2 more entries not shown]"]


async def test_list_dir_errors(ws: Path) -> None:
    (ws / "f").write_text("")
    assert (await call("list_dir", ws, path="f")).code == "not_a_directory"
    assert (await call("list_dir", ws, path="missing")).code == "not_found"


# glob


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("src/a.py", "src/a.py", True),
        ("*.py", "a.py", True),
        ("*.py", "src/a.py", False),
        ("**/*.py", "a.py", True),
        ("**/*.py", "src/deep/a.py", True),
        ("src/**", "src/deep/a.py", True),
        ("src/*/a.py", "src/deep/a.py", True),
        ("src/*/a.py", "src/a.py", False),
        ("?.py", "a.py", True),
        ("[ab].py", "b.py", True),
        ("[!ab].py", "c.py", True),
        ("[!ab].py", "a.py", False),
        ("*.{js,ts}", "x.ts", True),
        ("*.{js,ts}", "x.py", False),
        ("{src,lib}/**/*.{c,h}", "lib/x/y.h", True),
        ("./*.md", "README.md", True),
        ("a+b(c).txt", "a+b(c).txt", True),
    ],
)
async def test_glob_patterns(ws: Path, pattern: str, path: str, matches: bool) -> None:
    (ws / path).parent.mkdir(parents=True, exist_ok=True)
    (ws / path).write_text("")
    result = await call("glob", ws, pattern=pattern)
    assert not result.is_error
    assert (path in result.output.splitlines()) is matches


async def test_glob_finds_files_sorted_skipping_git(ws: Path) -> None:
    for rel in ["b.py", "a.py", "src/z.py", "src/m/n.py", ".git/hook.py", "notes.txt"]:
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text("")
    result = await call("glob", ws, pattern="**/*.py")
    assert result.output == "a.py\nb.py\nsrc/m/n.py\nsrc/z.py"
    scoped = await call("glob", ws, pattern="*.py", path="src")
    assert scoped.output == "src/z.py"
    absolute = await call("glob", ws, pattern=f"{Workspace(ws).root}/src/*.py")
    assert absolute.output == "src/z.py"
    none = await call("glob", ws, pattern="*.rs")
    assert not none.is_error and none.output == "No files match '*.rs'."


async def test_glob_capped(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(glob_module, "MAX_RESULTS", 2)
    for i in range(4):
        (ws / f"f{i}.txt").write_text("")
    result = await call("glob", ws, pattern="*.txt")
    assert result.output.splitlines() == [
        "f0.txt",
        "f1.txt",
        "[2 more matches not shown; narrow the pattern]",
    ]


# grep


async def test_grep_lines_with_paths(ws: Path) -> None:
    (ws / "src").mkdir()
    (ws / "src" / "a.py").write_text("import os\ndef main():\n    return os.getcwd()\n")
    (ws / "b.txt").write_text("no imports\r\nOS here\n")
    result = await call("grep", ws, pattern=r"\bos\b")
    assert result.output == "src/a.py:1: import os\nsrc/a.py:3:     return os.getcwd()"
    ignore_case = await call("grep", ws, pattern=r"\bos\b", ignore_case=True, glob="*.txt")
    assert ignore_case.output == "b.txt:2: OS here"
    scoped = await call("grep", ws, pattern="def", path="src/a.py")
    assert scoped.output == "src/a.py:2: def main():"
    by_path = await call("grep", ws, pattern="import", glob="src/*.py")
    assert by_path.output == "src/a.py:1: import os"


async def test_grep_skips_binary_and_git(ws: Path) -> None:
    (ws / ".git").mkdir()
    (ws / ".git" / "config").write_text("needle\n")
    (ws / "blob.bin").write_bytes(b"needle\x00")
    (ws / "t.txt").write_text("needle\n")
    result = await call("grep", ws, pattern="needle")
    assert result.output == "t.txt:1: needle"


async def test_grep_no_match_and_missing_path(ws: Path) -> None:
    (ws / "t.txt").write_text("hay\n")
    none = await call("grep", ws, pattern="needle")
    assert not none.is_error and none.output == "No matches."
    missing = await call("grep", ws, pattern="x", path="nope")
    assert missing.code == "not_found"


async def test_grep_bad_regex_is_invalid_arguments(ws: Path) -> None:
    result = await call("grep", ws, pattern="foo(")
    assert result.is_error and result.code == "invalid_arguments"
    assert "'foo(' is not a valid regular expression" in result.output
    assert "unclosed group" in result.output


async def test_grep_capped(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(grep_module, "MAX_MATCHES", 3)
    (ws / "t.txt").write_text("hit\n" * 10)
    result = await call("grep", ws, pattern="hit")
    assert result.output.splitlines() == [
        "t.txt:1: hit",
        "t.txt:2: hit",
        "t.txt:3: hit",
        "[stopped at 3 matches; narrow the pattern, path or glob]",
    ]


async def test_grep_clips_long_lines(ws: Path) -> None:
    (ws / "t.txt").write_text("hit" + "y" * 1000 + "\n")
    result = await call("grep", ws, pattern="hit")
    assert "[line cut at 300 of 1003 characters]" in result.output


async def test_searches_skip_gitignored_files_unless_named(ws: Path) -> None:
    """The decision ripgrep brings (as in Claude Code and Codex): in a git
    work tree, ignored files are left out of a search, hidden files are not,
    and naming an ignored directory as the path searches it."""
    (ws / ".git").mkdir()
    (ws / ".gitignore").write_text("build/\n*.log\n")
    (ws / "build").mkdir()
    (ws / "build" / "out.txt").write_text("needle\n")
    (ws / "run.log").write_text("needle\n")
    (ws / "src.txt").write_text("needle\n")
    (ws / ".hidden.txt").write_text("needle\n")
    grep = await call("grep", ws, pattern="needle")
    assert grep.output == ".hidden.txt:1: needle\nsrc.txt:1: needle"
    glob = await call("glob", ws, pattern="**/*.txt")
    assert glob.output == ".hidden.txt\nsrc.txt"
    named = await call("grep", ws, pattern="needle", path="build")
    assert named.output == "build/out.txt:1: needle"
    listed = await call("glob", ws, pattern="**", path="build")
    assert listed.output == "build/out.txt"
