"""Threads you can find and reshape from the CLI: ``kun threads``, rewinding
and forking by turn number, undoing a rewind, ``--json`` shapes."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import msgspec
import pytest
from click.testing import CliRunner

from kun.contracts.events import Event
from kun.entry import cli
from kun.store.jsonl import JsonlEventStore
from kun.testing.logbuilder import LogBuilder

HOUR = 3_600_000
START = 1_767_225_600_000  # 2026-01-01 00:00 UTC


def _write(home: Path, events: list[Event]) -> None:
    path = home / "threads" / events[0].thread_id / "events.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(msgspec.json.encode(e) + b"\n" for e in events))


def _thread(
    thread_id: str,
    *,
    workspace: str = "/w",
    turns: int = 1,
    cost: float | None = 0.25,
    start_at: int = START,
) -> list[Event]:
    b = LogBuilder(thread_id, start_at=start_at)
    b.create(workspace=workspace, title=f"title of {thread_id}", provider="p", model="m1")
    for n in range(1, turns + 1):
        b.start_turn(f"prompt {n}")
        b.assistant_text([f"answer {n}"])
        b.usage(prompt_tokens=1000, completion_tokens=50, cost_usd=cost)
        b.complete()
    return b.events


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def tokyo(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Local time far from UTC, so a UTC time would show."""
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_threads_newest_first_with_workspace_model_local_time_tokens_cost(
    tmp_path: Path, tokyo: None
) -> None:
    _write(tmp_path, _thread("t_old", start_at=START))
    _write(tmp_path, _thread("t_new", start_at=START + HOUR, turns=2, cost=None))
    code, out, err = _run("threads", "--home", str(tmp_path))
    assert code == 0, err
    header, new, old = out.strip().split("\n")
    assert header.split() == [
        "THREAD", "TITLE", "WORKSPACE", "MODEL", "STATUS", "TURNS", "LAST", "ACTIVITY", "TOKENS",
        "COST",
    ]  # fmt: skip
    assert new.split()[:2] == ["t_new", "title"] and old.startswith("t_old")
    assert " /w " in new and " p/m1 " in new and " completed " in new
    assert new.split()[-5:] == ["2", "2026-01-01", "10:00", "2,100", "unknown"]
    assert "$0.0000" not in out and old.split()[-2:] == ["1,050", "$0.2500"]
    code, limited, _ = _run("threads", "--limit", "1", "--home", str(tmp_path))
    assert code == 0 and "t_new" in limited and "t_old" not in limited


def test_threads_here_lists_this_workspace_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    here = tmp_path / "project"
    here.mkdir()
    _write(tmp_path, _thread("t_here", workspace=str(here.resolve())))
    _write(tmp_path, _thread("t_there", workspace="/elsewhere"))
    monkeypatch.chdir(here)
    code, out, _ = _run("threads", "--here", "--home", str(tmp_path))
    assert code == 0 and "t_here" in out and "t_there" not in out
    code, out, _ = _run("threads", "--here", "--home", str(tmp_path / "empty"))
    assert code == 0 and out.startswith("no threads under")


def test_threads_json_is_a_stable_array(tmp_path: Path) -> None:
    _write(tmp_path, _thread("t_priced"))
    _write(tmp_path, _thread("t_unpriced", cost=None, start_at=START + HOUR))
    code, out, _ = _run("threads", "--json", "--home", str(tmp_path))
    assert code == 0
    unpriced, priced = json.loads(out)
    assert unpriced["thread_id"] == "t_unpriced" and unpriced["cost_usd"] is None
    assert priced["cost_usd"] == 0.25 and priced["usage"]["prompt_tokens"] == 1000
    assert {"title", "title_source", "workspace", "provider", "model", "status", "turns",
            "created_at", "updated_at", "usage", "hidden", "error"} <= set(priced)  # fmt: skip
    assert priced["updated_at"] > priced["created_at"] and priced["error"] is None


def test_rewinding_a_turn_already_hidden_is_refused_and_hides_nothing(tmp_path: Path) -> None:
    _write(tmp_path, _thread("t_hid", turns=3))
    home = ("--home", str(tmp_path))
    assert _run("rewind", "t_hid", "3", *home)[0] == 0
    code, out, err = _run("rewind", "t_hid", "3", *home)
    assert code == 1 and out == ""
    assert err.startswith("kun: error: turn 3 of thread 't_hid' is already hidden (by the rewind")
    code, out, err = _run("rewind", "t_hid", "--undo", *home)
    assert "brought back 1 turn " in out


def test_rewind_by_turn_number_then_undo(tmp_path: Path) -> None:
    _write(tmp_path, _thread("t_cli", turns=3))
    home = ("--home", str(tmp_path))
    code, out, err = _run("rewind", "t_cli", "--before-turn", "2", *home)
    assert code == 0, err
    assert "hid turn 2 and the 1 later turn (turn 2 is" in out
    code, shown, _ = _run("replay", "t_cli", *home)
    assert "== turn 1 ·" in shown and "-- turn 2 · hidden by the rewind" in shown
    code, shown, _ = _run("replay", "t_cli", "--hidden", *home)
    assert "== turn 2 · HIDDEN by the rewind at seq" in shown
    assert "~ user > prompt 2" in shown and "  user > prompt 1" in shown
    code, out, err = _run("rewind", "t_cli", "--undo", *home)
    assert code == 0, err
    assert "brought back 2 turns " in out
    code, shown, _ = _run("replay", "t_cli", *home)
    assert "hidden" not in shown and "== turn 3 ·" in shown
    code, _, err = _run("rewind", "t_cli", "--undo", *home)
    assert code == 1 and err == "kun: error: thread 't_cli' has no rewind to undo\n"


def test_fork_at_turn_keeps_turns_one_to_n(tmp_path: Path) -> None:
    _write(tmp_path, _thread("t_cli", turns=3))
    home = ("--home", str(tmp_path))
    code, out, err = _run("fork", "t_cli", "--at-turn", "2", "--json", *home)
    assert code == 0, err
    shape = json.loads(out)
    assert shape["source_thread_id"] == "t_cli" and set(shape) == {
        "thread_id", "source_thread_id", "source_seq",
    }  # fmt: skip
    events = list(JsonlEventStore(tmp_path).read(shape["thread_id"]))
    assert events[-2].seq == shape["source_seq"]
    code, shown, _ = _run("replay", shape["thread_id"], *home)
    assert "prompt 2" in shown and "prompt 3" not in shown and "== turn 2 ·" in shown
    code, new, _ = _run("fork", "t_cli", "--at-turn", "3", *home)
    code, shown, _ = _run("replay", new.strip(), *home)
    assert "prompt 3" in shown


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("rewind", "t_cli", "--before-turn", "9"), "has 1 turn: there is no turn 9"),
        (("rewind", "t_cli"), "give --before-turn N (or a turn id), or --undo"),
        (("rewind", "t_cli", "--before-turn", "1", "--undo"), "or --undo"),
        (("fork", "t_cli", "--at-turn", "2"), "there is no turn 2"),
        (("fork", "t_cli", "--at-turn", "0"), "--at-turn"),
        (("fork", "t_cli", "--at-turn", "1", "--at-seq", "2"), "not both"),
        (("threads", "--limit", "zero"), "--limit"),
        (("threads", "--bogus"), "--bogus"),
        (("usage", "t_cli", "t_cli", "t_cli"), "give one thread"),
        (("run",), "PROMPT"),
        (("run", "hi", "--json", "--nope"), "--nope"),
        (("replay",), "THREAD"),
        (("reconcile", "extra"), "extra"),
        (("nosuchcommand",), "nosuchcommand"),
    ],
)
def test_usage_errors_are_one_line_and_exit_1(
    tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    _write(tmp_path, _thread("t_cli"))
    code, out, err = _run(*args, "--home", str(tmp_path))
    assert code == 1 and out == ""
    assert err.count("\n") == 1 and err.startswith("kun: error: ") and message in err, err


def test_usage_and_reconcile_json(tmp_path: Path) -> None:
    _write(tmp_path, _thread("t_cli"))
    code, out, _ = _run("usage", "t_cli", "--json", "--home", str(tmp_path))
    assert code == 0
    (only,) = json.loads(out)["threads"]
    assert only["thread_id"] == "t_cli" and only["cost_usd"] == 0.25
    assert only["usage"]["calls"] == 1 and only["skipped_lines"] == 0
    code, out, _ = _run("reconcile", "--json", "--home", str(tmp_path))
    assert code == 0 and json.loads(out) == {"reconciled": [], "skipped": {}}


def test_local_time_is_local(tokyo: None) -> None:
    from kun.app.listing import format_when

    assert format_when(START) == datetime.fromtimestamp(START / 1000).strftime("%Y-%m-%d %H:%M")
    assert format_when(START) == "2026-01-01 09:00"


@pytest.mark.parametrize(
    ("calls", "unpriced", "cost", "shown"),
    [
        (0, 0, 0.0, "unknown"),
        (2, 2, 0.0, "unknown"),
        (2, 1, 0.5, "$0.5000+"),
        (1, 0, 0.0, "$0.0000"),
    ],
)
def test_a_cost_nobody_reported_reads_unknown(
    calls: int, unpriced: int, cost: float, shown: str
) -> None:
    from kun.app.listing import format_cost
    from kun.contracts.usage import UsageTotals

    usage = UsageTotals(calls=calls, unpriced_calls=unpriced, cost_usd=cost)
    assert format_cost(usage) == shown


def _threads_on_a_terminal(home: Path, columns: int) -> list[str]:
    """``kun threads`` as printed on a terminal ``columns`` wide."""
    import sys

    import pexpect

    from tests.terminal_support import environ, plain

    child = pexpect.spawn(
        sys.executable,
        ["-m", "kun", "threads", "--home", str(home)],
        env=environ(COLUMNS=str(columns)),
        encoding="utf-8",
        dimensions=(40, columns),
        timeout=60,
    )
    out = child.read()
    child.close()
    assert child.exitstatus == 0, out
    return plain(out).replace("\r\n", "\n").rstrip("\n").split("\n")


LONG = "/home/someone/projects/a-rather-long-client-name/services/billing-api"


def _long_threads(home: Path) -> list[str]:
    ids = [  # the first two started in the same millisecond
        "thr_01kbr2z0x1abcdefghjkmnpqrs",
        "thr_01kbr2z0x1bbcdefghjkmnpqrs",
        "thr_01kbr3a4b5abcdefghjkmnpqrs",
    ]
    for n, thread_id in enumerate(ids):
        b = LogBuilder(thread_id, start_at=START + n * HOUR)
        b.create(workspace=LONG, title="Migrate the billing service to the new queue " * 2,
                 provider="openrouter", model="anthropic/claude-sonnet-4.5")  # fmt: skip
        b.start_turn("go")
        b.usage(prompt_tokens=123_456, completion_tokens=7_890, cost_usd=1.5)
        b.complete()
        _write(home, b.events)
    return ids


@pytest.mark.parametrize("columns", [80, 120])
def test_threads_fit_the_terminal_width(tmp_path: Path, columns: int) -> None:
    ids = _long_threads(tmp_path)
    code, piped, _ = _run("threads", "--home", str(tmp_path))
    assert code == 0 and max(map(len, piped.splitlines())) > 120  # piped: in full, as before
    lines = _threads_on_a_terminal(tmp_path, columns)
    assert len(lines) == 4, lines
    assert all(len(line) <= columns for line in lines), lines
    header = lines[0].split()
    assert header[:2] == ["THREAD", "TITLE"] and header[-1] == "COST"
    assert ("WORKSPACE" in header) == (columns == 120)
    shown = [line.split()[0] for line in lines[1:]]
    for thread_id in ids:  # each printed prefix names its thread, and only it
        (prefix,) = [p for p in shown if thread_id.startswith(p)]
        code, out, err = _run("replay", prefix, "--home", str(tmp_path))
        assert code == 0 and thread_id in out, err
    assert all("Migrate the" in line and "$1.5000" in line for line in lines[1:])


def test_threads_fit_a_narrow_terminal_by_leaving_out_more_columns(tmp_path: Path) -> None:
    _long_threads(tmp_path)
    lines = _threads_on_a_terminal(tmp_path, 50)
    assert len(lines) == 4, lines
    assert all(len(line) <= 50 for line in lines), lines
    assert lines[0].split()[:3] == ["THREAD", "TITLE", "STATUS"]


def test_an_error_that_suggests_a_command_gives_it_with_the_home(tmp_path: Path) -> None:
    _write(tmp_path, _thread("t_err", turns=1))
    code, _, err = _run("rewind", "t_err", "zz", "--home", str(tmp_path))
    assert code == 1
    assert f"as kun replay t_err --home {tmp_path} shows them)" in err
