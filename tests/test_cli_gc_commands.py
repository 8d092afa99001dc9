"""The clean-up commands as a person types them: kun gc (and --confirm),
kun rm, kun trash, kun restore; mistakes are one line and a non-zero exit."""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from kun.app.trash import remove_thread, trashed
from kun.entry import cli
from kun.store.lock import lock_thread
from kun.store.paths import lock_path, log_path, thread_dir
from kun.store.replay import replay_log
from tests.test_cli_gc import TID, rewound_log, write_log


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_gc_then_confirm(tmp_path: Path) -> None:
    path = write_log(tmp_path, rewound_log().events)
    before = path.stat().st_size
    code, out, _ = run("gc", TID, "--home", str(tmp_path))
    assert code == 0
    saved = before - path.stat().st_size
    assert "dropped 2 hidden turns " in out and f"{saved} bytes saved" in out
    assert f"kun gc {TID} --confirm --home {tmp_path}" in out
    assert (thread_dir(tmp_path, TID) / "generations" / "1" / "events.jsonl").exists()
    code, out, _ = run("gc", TID, "--confirm", "--home", str(tmp_path))
    assert code == 0 and f"{before} bytes freed" in out
    assert not (thread_dir(tmp_path, TID) / "generations").exists()
    code, out, _ = run("gc", TID, "--home", str(tmp_path))
    assert code == 0 and "nothing to collect" in out


def test_gc_of_an_unknown_thread_is_one_line(tmp_path: Path) -> None:
    code, out, err = run("gc", "nope", "--home", str(tmp_path))
    assert code == 1 and out == "" and err.count("\n") == 1 and "not found" in err


def test_gc_and_rm_refuse_a_thread_being_written(tmp_path: Path) -> None:
    path = write_log(tmp_path, rewound_log().events)
    old = path.read_bytes()
    fd = lock_thread(TID, lock_path(tmp_path, TID))  # as kun serve holds it
    try:
        for command in ("gc", "rm"):
            code, _, err = run(command, TID, "--home", str(tmp_path))
            assert code == 1 and "being written by" in err and err.count("\n") == 1
    finally:
        os.close(fd)
    assert path.read_bytes() == old


def test_rm_moves_to_the_trash_and_restore_brings_it_back(tmp_path: Path) -> None:
    path = write_log(tmp_path, rewound_log().events)
    state = replay_log(path)
    code, out, _ = run("rm", TID, "--home", str(tmp_path))
    assert code == 0 and not thread_dir(tmp_path, TID).exists()
    assert out.endswith(f"kun restore {TID} --home {tmp_path} brings it back\n")
    code, out, _ = run("threads", "--home", str(tmp_path))
    assert TID not in out
    code, out, _ = run("trash", "--home", str(tmp_path))
    assert code == 0 and out.startswith(TID)
    code, out, _ = run("restore", TID, "--home", str(tmp_path))
    assert code == 0 and replay_log(log_path(tmp_path, TID)) == state
    assert trashed(tmp_path) == []


def test_restore_refuses_over_a_live_thread_and_picks_the_latest(tmp_path: Path) -> None:
    write_log(tmp_path, rewound_log().events)
    first = remove_thread(tmp_path, TID, datetime(2026, 1, 1, tzinfo=UTC))
    write_log(tmp_path, rewound_log().events[:3])
    remove_thread(tmp_path, TID, datetime(2026, 2, 1, tzinfo=UTC))
    write_log(tmp_path, rewound_log().events[:2])
    code, _, err = run("restore", TID, "--home", str(tmp_path))
    assert code == 1 and "exists again" in err and err.count("\n") == 1
    latest = trashed(tmp_path)[0].path.name
    assert re.search(
        f"kun restore {latest} --as thr_[0-9a-z]{{26}} --home {tmp_path} restores it", err
    )
    assert f"kun rm {TID} --home {tmp_path})" in err
    run("rm", TID, "--home", str(tmp_path))
    code, _, _ = run("restore", first.name, "--home", str(tmp_path))
    assert code == 0 and len(replay_log(log_path(tmp_path, TID)).turns) == 4
    assert len(trashed(tmp_path)) == 2  # nothing in the trash is deleted


def test_a_printed_command_names_the_home_only_when_it_is_not_the_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUN_HOME", str(tmp_path))
    write_log(tmp_path, rewound_log().events)
    code, out, _ = run("rm", TID, "--home", str(tmp_path))
    assert code == 0 and out.endswith(f"; kun restore {TID} brings it back\n")
