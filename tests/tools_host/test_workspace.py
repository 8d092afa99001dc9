"""Confinement: every file tool refuses paths that resolve outside the
workspace, whether by ``..``, an absolute path or a symlink."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kun.tools import OutsideWorkspace, ToolError, Workspace
from tests.tools_host.support import call

pytestmark = pytest.mark.anyio


def test_relative_and_absolute_inside_resolve(ws: Path) -> None:
    (ws / "a").mkdir()
    workspace = Workspace(ws)
    assert workspace.resolve("a/b.txt") == workspace.root / "a" / "b.txt"
    assert workspace.resolve(str(ws / "a")) == workspace.root / "a"
    assert workspace.resolve("") == workspace.root
    assert workspace.resolve("a/../a/./b") == workspace.root / "a" / "b"
    assert workspace.relative(workspace.resolve(".")) == "."
    assert workspace.relative(workspace.resolve("a/b")) == "a/b"


@pytest.mark.parametrize("path", ["../outside/secret.txt", "a/../../x", "/etc/passwd", ".."])
def test_escapes_are_refused_naming_path_and_workspace(ws: Path, path: str) -> None:
    workspace = Workspace(ws)
    with pytest.raises(OutsideWorkspace) as info:
        workspace.resolve(path)
    assert info.value.code == "outside_workspace"
    assert repr(path) in info.value.message
    assert str(workspace.root) in info.value.message


def test_symlink_pointing_out_is_refused(ws: Path) -> None:
    (ws / "link").symlink_to(ws.parent / "outside" / "secret.txt")
    with pytest.raises(OutsideWorkspace, match="through a symlink"):
        Workspace(ws).resolve("link")


def test_new_file_under_symlinked_dir_pointing_out_is_refused(ws: Path) -> None:
    (ws / "out").symlink_to(ws.parent / "outside", target_is_directory=True)
    with pytest.raises(OutsideWorkspace):
        Workspace(ws).resolve("out/new/file.txt")


def test_symlink_pointing_inside_is_allowed(ws: Path) -> None:
    (ws / "real.txt").write_text("x")
    (ws / "alias").symlink_to(ws / "real.txt")
    workspace = Workspace(ws)
    assert workspace.resolve("alias") == workspace.root / "real.txt"


def test_workspace_reached_through_a_symlink(tmp_path: Path, ws: Path) -> None:
    via = tmp_path / "via"
    via.symlink_to(ws, target_is_directory=True)
    workspace = Workspace(via)
    assert workspace.resolve(str(via / "f.txt")) == ws.resolve() / "f.txt"


async def test_file_tools_refuse_every_escape(ws: Path) -> None:
    outside = ws.parent / "outside"
    (ws / "link").symlink_to(outside / "secret.txt")
    (ws / "out").symlink_to(outside, target_is_directory=True)
    attempts = [
        ("read_file", {"path": "../outside/secret.txt"}),
        ("read_file", {"path": "/etc/passwd"}),
        ("read_file", {"path": "link"}),
        ("list_dir", {"path": "out"}),
        ("grep", {"pattern": "secret", "path": "out"}),
        ("glob", {"pattern": "../outside/*"}),
        ("glob", {"pattern": "*", "path": "/etc"}),
        ("write_file", {"path": "out/new/file.txt", "content": "x"}),
        ("write_file", {"path": "../escape.txt", "content": "x"}),
        ("edit_file", {"path": "link", "old_string": "top", "new_string": "no"}),
    ]
    for name, args in attempts:
        result = await call(name, ws, **args)
        assert result.is_error, (name, args)
        assert result.code == "outside_workspace", (name, args, result)
    assert (outside / "secret.txt").read_text() == "top secret\n"
    assert not (outside / "new").exists()
    assert not (ws.parent / "escape.txt").exists()


async def test_searches_do_not_follow_links_out(ws: Path) -> None:
    outside = ws.parent / "outside"
    (ws / "link.txt").symlink_to(outside / "secret.txt")
    (ws / "out").symlink_to(outside, target_is_directory=True)
    (ws / "mine.txt").write_text("not a secret\n")
    grep = await call("grep", ws, pattern="secret")
    assert grep.output == "mine.txt:1: not a secret"
    glob = await call("glob", ws, pattern="**/*.txt")
    assert glob.output == "mine.txt"
    listing = await call("list_dir", ws)
    assert listing.output.splitlines() == ["link.txt@", "mine.txt", "out@"]


def test_nul_in_path_is_invalid(ws: Path) -> None:
    with pytest.raises(ToolError, match="NUL") as info:
        Workspace(ws).resolve("a\x00b")
    assert info.value.code == "invalid_arguments"


def test_root_is_real_path(ws: Path) -> None:
    assert Workspace(ws).root == Path(os.path.realpath(ws))
