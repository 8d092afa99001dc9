"""Importing again what was imported and then continued in kun never
destroys the turns run in kun: an unchanged source is already imported (the
turns counted), a changed one is refused saying what differs, and
``--replace`` moves the thread as it is to the trash, where ``kun restore
--as`` brings it back beside the new import. Bundles behave the same."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import msgspec
import pytest
from click.testing import CliRunner

from kun.app.trash import restore_thread, trashed
from kun.entry import cli
from kun.errors import UserMistake
from kun.portable import install as install_module
from kun.portable.errors import ImportChanged
from kun.portable.sessions import import_session
from kun.store.paths import log_path, thread_dir
from kun.store.replay import replay_log
from tests.portable.kun_turns import continue_in_kun
from tests.portable.test_sessions import claude_lines, codex_lines

NEW_ID = r"thr_[0-9a-z]{26}"
"""A fresh thread id, as kun prints it for --as (pasted, it names a new thread)."""

SOURCES = [("codex", codex_lines), ("claude-code", claude_lines)]


def _write(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_bytes(b"".join(msgspec.json.encode(line) + b"\n" for line in lines))
    return path


@pytest.fixture
def continued(tmp_path: Path, request: pytest.FixtureRequest) -> tuple[Path, Path, str, str]:
    """A session imported, then continued in kun for 3 turns: its home,
    file, source and thread id."""
    source, lines = request.param
    home, workspace = tmp_path / "home", tmp_path / "ws"
    workspace.mkdir()
    path = _write(tmp_path / "s.jsonl", lines())
    thread_id = import_session(
        home, path, source, replace_changed=False, workspace=workspace
    ).thread_id
    continue_in_kun(home, thread_id, 3)
    return home, path, source, thread_id


pytestmark = pytest.mark.parametrize("continued", SOURCES, ids=["codex", "claude"], indirect=True)


def test_an_unchanged_session_is_already_imported_with_the_kun_turns_counted(
    continued: tuple[Path, Path, str, str],
) -> None:
    home, path, source, thread_id = continued
    log = log_path(home, thread_id).read_bytes()
    again = import_session(home, path, source, replace_changed=False)
    assert (again.thread_id, again.outcome) == (thread_id, "already_imported")
    assert again.detail == "the thread has 3 turns run in kun since"
    assert log_path(home, thread_id).read_bytes() == log


def test_workspace_on_an_unchanged_import_is_said_not_applied(
    continued: tuple[Path, Path, str, str], tmp_path: Path
) -> None:
    home, path, source, thread_id = continued
    again = import_session(home, path, source, replace_changed=False, workspace=tmp_path)
    assert again.outcome == "already_imported"
    assert again.detail == (
        f"the thread has 3 turns run in kun since; --workspace not applied to a thread "
        f"already there: kun run --thread {thread_id} --workspace {tmp_path} PROMPT rebinds it"
    )


def test_a_grown_session_is_refused_saying_what_differs(
    continued: tuple[Path, Path, str, str],
) -> None:
    home, path, source, thread_id = continued
    log = log_path(home, thread_id).read_bytes()
    lines = codex_lines() if source == "codex" else claude_lines()
    _write(path, [*lines, *lines[-2:]])
    with pytest.raises(ImportChanged) as refused:
        import_session(home, path, source, replace_changed=False)
    message = str(refused.value)
    assert "the session has 2 new records since it was imported at " in message
    assert "the kun thread has 3 turns run in kun since" in message
    assert "--replace" in message and "--as NEW_ID" in message
    assert log_path(home, thread_id).read_bytes() == log


def test_a_rewritten_session_is_refused_as_rewritten(
    continued: tuple[Path, Path, str, str],
) -> None:
    home, path, source, _ = continued
    path.write_bytes(path.read_bytes().replace(b"2025-10-01T12:00:0", b"2025-10-02T12:00:0"))
    with pytest.raises(ImportChanged, match="the session file was rewritten since it was"):
        import_session(home, path, source, replace_changed=False)


def test_replace_moves_the_thread_to_the_trash_and_restore_as_brings_it_back(
    continued: tuple[Path, Path, str, str],
) -> None:
    home, path, source, thread_id = continued
    before = log_path(home, thread_id).read_bytes()
    lines = codex_lines() if source == "codex" else claude_lines()
    _write(path, [*lines, *lines[-2:]])
    replaced = import_session(home, path, source, replace_changed=True)
    assert (replaced.thread_id, replaced.outcome) == (thread_id, "replaced")
    assert replaced.trashed is not None
    assert (replaced.trashed / "events.jsonl").read_bytes() == before
    assert b"go on" not in log_path(home, thread_id).read_bytes()
    assert [entry.path for entry in trashed(home)] == [replaced.trashed]

    with pytest.raises(UserMistake, match=f"kun restore {replaced.trashed.name} --as {NEW_ID}"):
        restore_thread(home, thread_id)
    assert restore_thread(home, replaced.trashed.name, "thr_mine") == "thr_mine"
    state = replay_log(log_path(home, "thr_mine"))
    assert state.thread_id == "thr_mine"
    assert len(state.turns) == len(replay_log(log_path(home, thread_id)).turns) + 3
    assert b'"go on 2"' in log_path(home, "thr_mine").read_bytes()
    assert trashed(home) == []


def test_as_imports_a_changed_session_beside_the_thread(
    continued: tuple[Path, Path, str, str],
) -> None:
    home, path, source, thread_id = continued
    log = log_path(home, thread_id).read_bytes()
    lines = codex_lines() if source == "codex" else claude_lines()
    _write(path, [*lines, *lines[-2:]])
    beside = import_session(home, path, source, replace_changed=False, as_id="thr_beside")
    assert (beside.thread_id, beside.outcome) == ("thr_beside", "imported")
    assert replay_log(log_path(home, "thr_beside")).thread_id == "thr_beside"
    assert log_path(home, thread_id).read_bytes() == log


class Crash(BaseException):
    """kun killed between two renames."""


def _failing_second_rename(
    monkeypatch: pytest.MonkeyPatch, error: BaseException
) -> list[tuple[str, str]]:
    calls: list[tuple[str, str]] = []
    real = os.rename

    def rename(source: Any, target: Any) -> None:
        calls.append((str(source), str(target)))
        if len(calls) == 2:
            raise error
        real(source, target)

    monkeypatch.setattr(install_module.os, "rename", rename)
    return calls


def test_a_failed_install_puts_the_old_thread_back(
    continued: tuple[Path, Path, str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    home, path, source, thread_id = continued
    before = log_path(home, thread_id).read_bytes()
    lines = codex_lines() if source == "codex" else claude_lines()
    _write(path, [*lines, *lines[-2:]])
    _failing_second_rename(monkeypatch, OSError(28, "No space left on device"))
    with pytest.raises(OSError, match="No space"):
        import_session(home, path, source, replace_changed=True)
    assert log_path(home, thread_id).read_bytes() == before
    assert trashed(home) == []


def test_a_crash_between_trash_and_install_leaves_the_old_thread_in_the_trash(
    continued: tuple[Path, Path, str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    home, path, source, thread_id = continued
    before = log_path(home, thread_id).read_bytes()
    lines = codex_lines() if source == "codex" else claude_lines()
    _write(path, [*lines, *lines[-2:]])
    _failing_second_rename(monkeypatch, Crash())
    with pytest.raises(Crash):
        import_session(home, path, source, replace_changed=True)
    monkeypatch.undo()
    assert not thread_dir(home, thread_id).exists()
    entry = trashed(home)[0].path.name
    again = import_session(home, path, source, replace_changed=False)
    assert again.outcome == "imported"
    assert re.fullmatch(
        f"an earlier thread {thread_id} is in the trash: kun restore {entry} --as {NEW_ID} "
        "brings it back beside this one",
        again.detail,
    )
    assert restore_thread(home, entry, "thr_kept") == "thr_kept"
    assert log_path(home, "thr_kept").read_bytes() == before  # its lines name no thread


def test_the_cli_says_it_in_one_line_each_time(continued: tuple[Path, Path, str, str]) -> None:
    home, path, source, thread_id = continued
    runner = CliRunner()
    base = ["import", "--from", source, str(path), "--home", str(home)]
    again = runner.invoke(cli, base)
    assert (again.exit_code, again.stdout) == (0, f"{thread_id}\n")
    assert again.stderr == (
        f"already imported: {thread_id} (the thread has 3 turns run in kun since)\n"
    )
    lines = codex_lines() if source == "codex" else claude_lines()
    _write(path, [*lines, lines[-1]])
    refused = runner.invoke(cli, base)
    assert refused.exit_code == 1 and refused.stderr.count("\n") == 1
    assert refused.stderr.startswith(f"kun: error: thread {thread_id}: the session has 1 new")
    replaced = runner.invoke(cli, [*base, "--replace"])
    assert replaced.exit_code == 0, replaced.output
    entry = trashed(home)[0].path.name
    assert re.search(f"kun restore {entry} --as {NEW_ID}", replaced.stderr)
    restored = runner.invoke(cli, ["restore", entry, "--as", "thr_mine", "--home", str(home)])
    assert (restored.exit_code, restored.stdout) == (0, "restored thr_mine\n")
    taken = runner.invoke(cli, ["restore", "thr_mine", "--home", str(home)])
    assert taken.exit_code == 1 and taken.stderr.count("\n") == 1


def test_the_restore_an_import_names_works_pasted(
    continued: tuple[Path, Path, str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Either adapter names a trash entry relative to the home
    (``trash/NAME``, as the API sends it): the line ``kun import --replace``
    prints names the entry as ``kun restore`` takes it, and ``kun restore
    trash/NAME`` works too."""
    from kun.app.answers import ImportDone
    from kun.cli.portable import said_import

    home, path, source, thread_id = continued
    lines = codex_lines() if source == "codex" else claude_lines()
    _write(path, [*lines, *lines[-2:]])
    import_session(home, path, source, replace_changed=True)
    entry = trashed(home)[0].path.name
    said_import(ImportDone(thread_id, "replaced", 9, "", f"trash/{entry}"))
    err = capsys.readouterr().err
    assert re.search(f"kun restore {entry} --as {NEW_ID} brings it back beside this one", err)
    assert restore_thread(home, f"trash/{entry}", "thr_back") == "thr_back"
