"""``kun export`` / ``kun import`` from the command line: ids on stdout,
every mistake one ``kun: error:`` line and exit status 1."""

from __future__ import annotations

import io
import re
import tarfile
from pathlib import Path

import msgspec
import pytest
from click.testing import CliRunner

from kun.entry import cli
from kun.store.paths import log_path
from tests.portable.conftest import stored_thread
from tests.portable.marks import unmarked
from tests.portable.test_import_marks import midway_bundle


def _kun(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_export_then_import_elsewhere(tmp_path: Path) -> None:
    home, other = tmp_path / "a", tmp_path / "b"
    stored_thread(home)
    out = tmp_path / "x.kun.tar.gz"
    code, stdout, _ = _kun("export", "thr_sou", "-o", str(out), "--home", str(home))
    assert code == 0 and "exported thr_source" in stdout
    code, stdout, stderr = _kun("import", str(out), "--home", str(other))
    assert (code, stdout) == (0, "thr_source\n")
    assert "imported thr_source" in stderr
    assert unmarked(log_path(other, "thr_source")) == log_path(home, "thr_source").read_bytes()
    code, stdout, stderr = _kun("import", str(out), "--home", str(other))
    assert (code, stdout) == (0, "thr_source\n") and "already imported" in stderr


def test_default_name_is_the_thread_id(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "a"
    stored_thread(home)
    monkeypatch.chdir(tmp_path)
    assert _kun("export", "thr_source", "--home", str(home))[0] == 0
    assert (tmp_path / "thr_source.kun.tar.gz").is_file()


def test_conflict_then_as(tmp_path: Path) -> None:
    home = tmp_path / "a"
    stored_thread(home)
    out = tmp_path / "x.kun.tar.gz"
    _kun("export", "thr_source", "-o", str(out), "--home", str(home))
    log_path(home, "thr_source").write_bytes(log_path(home, "thr_source").read_bytes()[:-1])
    code, _, stderr = _kun("import", str(out), "--home", str(home))
    assert code == 1 and stderr.count("\n") == 1
    assert stderr.startswith("kun: error: thread thr_source already exists") and "--as" in stderr
    code, stdout, _ = _kun("import", str(out), "--as", "thr_copy", "--home", str(home))
    assert (code, stdout) == (0, "thr_copy\n")


def test_mistakes_are_one_line(tmp_path: Path) -> None:
    junk = tmp_path / "junk.tar.gz"
    junk.write_bytes(b"junk")
    evil = tmp_path / "evil.tar"
    with tarfile.open(evil, "w") as tar:
        info = tarfile.TarInfo("../../evil")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))
    home = str(tmp_path / "h")
    for args, words in [
        (["import", str(tmp_path / "missing.tar.gz")], "does not exist"),
        (["import", str(junk)], "not a kun bundle"),
        (["import", str(evil)], "'../../evil' points outside the bundle"),
        (["export", "thr_none"], "not found"),
        (["import", str(junk), "--as", "../x"], "thread id"),
        (["import", str(junk), "--from", "nope"], "'nope' is not one of"),
    ]:
        code, _, stderr = _kun(*args, "--home", home)
        assert code == 1, args
        assert stderr.startswith("kun: error:") and stderr.count("\n") == 1, (args, stderr)
        assert words in stderr, (args, stderr)


def test_import_from_codex_and_again(tmp_path: Path) -> None:
    from tests.portable.test_sessions import codex_lines

    source = tmp_path / "rollout.jsonl"
    source.write_bytes(b"".join(msgspec.json.encode(line) + b"\n" for line in codex_lines()))
    home = str(tmp_path / "h")
    code, stdout, stderr = _kun("import", "--from", "codex", str(source), "--home", home)
    assert code == 0 and stdout.startswith("thr_") and stderr.startswith("imported")
    assert _kun("import", "--from", "codex", str(source), "--home", home)[1] == stdout
    code, _, stderr = _kun("import", "--from", "claude-code", str(tmp_path), "--home", home)
    assert code == 1 and stderr.count("\n") == 1
    code, _, stderr = _kun("import", "--replace", "--as", "thr_x", str(source), "--home", home)
    assert code == 1 and "--replace and --as" in stderr and stderr.count("\n") == 1


def test_a_refused_import_points_at_the_home_it_came_from_not_the_one_given(
    tmp_path: Path,
) -> None:
    """The reconcile hint is about the home the thread ran in: written with
    the import's --home it would settle a home the thread never was in."""
    bundle, other = midway_bundle(tmp_path), tmp_path / "other"
    code, _, stderr = _kun("import", str(bundle), "--home", str(other))
    assert code == 1 and stderr.count("\n") == 1
    assert (
        "settle it in the home it was exported from (kun reconcile, with that home's --home"
        in stderr
    )
    assert f"--home {other}" not in stderr


def test_the_commands_an_import_prints_carry_its_home(tmp_path: Path) -> None:
    from tests.portable.test_sessions import codex_lines

    source = tmp_path / "rollout.jsonl"
    lines = codex_lines()
    source.write_bytes(b"".join(msgspec.json.encode(line) + b"\n" for line in lines))
    home = str(tmp_path / "h")
    code, stdout, _ = _kun("import", "--from", "codex", str(source), "--home", home)
    thread = stdout.strip()
    code, _, stderr = _kun(
        "import", "--from", "codex", str(source), "--workspace", str(tmp_path), "--home", home
    )
    assert code == 0
    assert (
        f"kun run --thread {thread} --workspace {tmp_path} PROMPT --home {home} rebinds" in stderr
    )
    with source.open("ab") as grown:
        grown.write(b"".join(msgspec.json.encode(line) + b"\n" for line in lines[-2:]))
    code, _, stderr = _kun("import", "--from", "codex", str(source), "--home", home)
    assert code == 1 and f"kun restore --home {home} brings it back" in stderr
    code, _, stderr = _kun("import", "--from", "codex", str(source), "--replace", "--home", home)
    assert code == 0, stderr
    trashed = next((tmp_path / "h" / "trash").iterdir()).name
    assert re.search(
        f"kun restore {trashed} --as thr_[0-9a-z]{{26}} --home {home} brings it back", stderr
    )
