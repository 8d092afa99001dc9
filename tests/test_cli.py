"""The CLI: readable output, and one clear line plus a non-zero exit on mistakes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest
from click.testing import CliRunner

from kun.contracts.events import Event
from kun.domain.state import ThreadState
from kun.entry import cli
from kun.testing.logbuilder import LogBuilder

GOLDEN = Path(__file__).resolve().parent.parent / "events" / "golden"
_encoder = msgspec.json.Encoder()


def _write(home: Path, events: list[Event]) -> Path:
    path = home / "threads" / events[0].thread_id / "events.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(_encoder.encode(e) + b"\n" for e in events))
    return path


def _thread(thread_id: str = "t_cli", cost: float = 0.25) -> list[Event]:
    b = LogBuilder(thread_id)
    b.create(workspace="/w", title=f"title of {thread_id}")
    b.start_turn("list the files", model="m1")
    b.run_tool("list_dir", {"path": "."}, "a.py\nb.py")
    b.assistant_text(["Two files: ", "a.py and b.py."])
    b.usage(prompt_tokens=1000, completion_tokens=50, cache_hit_tokens=800, cost_usd=cost)
    b.complete()
    return b.events


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_replay_prints_a_readable_transcript(tmp_path: Path) -> None:
    _write(tmp_path, _thread())
    code, out, err = _run("replay", "t_cli", "--home", str(tmp_path))
    assert code == 0, err
    assert "== turn 1 · completed" in out
    assert "user > list the files" in out
    assert "tool list_dir" in out and "| a.py" in out
    assert "assistant > Two files: a.py and b.py." in out
    assert "$0.2500" in out


def test_replay_json_is_the_projection(tmp_path: Path) -> None:
    events = _thread()
    _write(tmp_path, events)
    code, out, _ = _run("replay", "t_cli", "--json", "--home", str(tmp_path))
    assert code == 0
    state = msgspec.json.decode(out, type=ThreadState)
    assert state.last_seq == events[-1].seq and state.turns[0].status == "completed"


def test_replay_until_seq_replays_a_prefix(tmp_path: Path) -> None:
    _write(tmp_path, _thread())
    code, out, _ = _run("replay", "t_cli", "--json", "--until-seq", "4", "--home", str(tmp_path))
    assert code == 0
    assert json.loads(out)["last_seq"] == 4


@pytest.mark.parametrize("golden", sorted(GOLDEN.glob("*.events.jsonl")), ids=lambda p: p.name)
def test_every_golden_log_replays_to_a_transcript(golden: Path) -> None:
    code, out, err = _run("replay", str(golden))
    assert code == 0, err
    assert out.startswith("== turn 1 ") and out.split("\n")[-2].startswith("total: ")
    assert "\n\nthread " in out, "the summary follows the turns"


@pytest.mark.parametrize(
    ("thread", "message"),
    [
        ("../x", "invalid thread id '../x'"),
        ("a\\b", "invalid thread id"),
        ("nope", "thread 'nope' not found"),
    ],
)
def test_user_mistakes_are_one_line_and_exit_non_zero(
    tmp_path: Path, thread: str, message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)  # where ../x names nothing (a checkout named x would be a folder)
    code, out, err = _run("replay", thread, "--home", str(tmp_path))
    assert code == 1
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("kun: error: ") and message in err


def test_a_corrupt_line_in_the_middle_names_file_and_line(tmp_path: Path) -> None:
    path = _write(tmp_path, _thread())
    lines = path.read_bytes().split(b"\n")
    lines[3] = b'{"kind": "usage", garbage'
    path.write_bytes(b"\n".join(lines))
    code, _, err = _run("replay", "t_cli", "--home", str(tmp_path))
    assert code == 1
    assert err.count("\n") == 1 and str(path) in err and "line 4" in err


def test_unknown_kinds_are_skipped_with_a_note_unless_strict(tmp_path: Path) -> None:
    path = _write(tmp_path, _thread())
    with path.open("ab") as f:
        f.write(b'{"kind":"from_the_future","seq":99,"at":1,"thread_id":"t_cli","v":1}\n')
    code, out, err = _run("replay", "t_cli", "--home", str(tmp_path))
    assert code == 0 and "turn 1" in out
    assert "from_the_future x1" in err
    code, _, err = _run("replay", "t_cli", "--strict", "--home", str(tmp_path))
    assert code == 1 and "from_the_future" in err and err.count("\n") == 1


def test_a_torn_tail_is_ignored_with_a_note(tmp_path: Path) -> None:
    path = _write(tmp_path, _thread())
    with path.open("ab") as f:
        f.write(b'{"kind":"assistant_text_del')
    code, out, err = _run("replay", "t_cli", "--home", str(tmp_path))
    assert code == 0 and "turn 1" in out
    assert "torn last line" in err


def test_threads_lists_every_thread_with_its_totals(tmp_path: Path) -> None:
    _write(tmp_path, _thread("t_one", cost=0.5))
    _write(tmp_path, _thread("t_two", cost=1.25))
    code, out, _ = _run("threads", "--home", str(tmp_path))
    assert code == 0
    rows = out.strip().split("\n")
    assert rows[0].split()[:3] == ["THREAD", "TITLE", "WORKSPACE"]
    assert rows[1].startswith("t_two") and "completed" in rows[1] and "$1.2500" in rows[1]
    assert rows[2].startswith("t_one") and "title of t_one" in rows[2] and "$0.5000" in rows[2]


def test_threads_on_an_empty_home_says_so(tmp_path: Path) -> None:
    code, out, _ = _run("threads", "--home", str(tmp_path))
    assert code == 0 and "no threads under" in out


def test_usage_compares_two_threads_and_counts_skipped_lines(tmp_path: Path) -> None:
    _write(tmp_path, _thread("t_a", cost=0.5))
    path = _write(tmp_path, _thread("t_b", cost=1.0))
    with path.open("ab") as f:
        f.write(b"not json at all\n")
    code, out, err = _run("usage", "t_a", "t_b", "--home", str(tmp_path))
    assert code == 0
    cost = next(line for line in out.split("\n") if line.startswith("cost (USD)"))
    assert cost.split()[2:] == ["0.500000", "1.000000", "+0.500000", "(+100.0%)"]
    assert "skipped 1 unreadable line\n" in err


def test_the_console_script_runs_as_a_module(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "kun", "replay", "nope", "--home", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 1
    assert proc.stderr == "kun: error: thread 'nope' not found\n"


def test_rewind_and_fork_mistakes_are_one_line(tmp_path: Path) -> None:
    _write(tmp_path, _thread())
    code, _, err = _run("rewind", "t_cli", "--before-turn", "nope", "--home", str(tmp_path))
    assert code == 1 and err.count("\n") == 1 and "has no turn 'nope'" in err
    code, _, err = _run("fork", "t_cli", "--at-seq", "999", "--home", str(tmp_path))
    assert code == 1 and err.count("\n") == 1 and "past its end" in err


def test_rewind_then_fork_from_the_cli(tmp_path: Path) -> None:
    events = _thread()
    _write(tmp_path, events)
    turn_id = events[1].turn_id
    assert turn_id is not None
    code, _, err = _run("rewind", "t_cli", "--before-turn", turn_id, "--home", str(tmp_path))
    assert code == 0, err
    code, fork_id, err = _run("fork", "t_cli", "--at-seq", "5", "--home", str(tmp_path))
    assert code == 0, err
    code, shown, _ = _run("replay", fork_id.strip(), "--home", str(tmp_path))
    assert code == 0 and "forked from t_cli at seq 5" in shown
    code, shown, _ = _run("replay", "t_cli", "--home", str(tmp_path))
    assert "hidden by the rewind" in shown


# -- hostile logs --------------------------------------------------------------

DEEP = b'{"kind":"warning","seq":9,"at":1,"thread_id":"t_cli","code":"c","message":"m","x":'
DEEP += b"[" * 1000 + b"]" * 1000 + b"}"


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().split(b"\n")[:-1]


def _put(path: Path, lines: list[bytes]) -> None:
    path.write_bytes(b"".join(line + b"\n" for line in lines))


def _open_turn(thread_id: str) -> list[Event]:
    b = LogBuilder(thread_id)
    b.create(workspace="/w", title=f"title of {thread_id}")
    b.start_turn("deploy")
    b.start_tool(b.tool_call("bash", {"command": "deploy.sh"}))
    return b.events


def test_strict_replay_refuses_a_log_with_a_missing_line(tmp_path: Path) -> None:
    path = _write(tmp_path, _thread())
    lines = _lines(path)
    del lines[4]
    _put(path, lines)
    code, _, err = _run("replay", "t_cli", "--strict", "--home", str(tmp_path))
    assert code == 1 and err.count("\n") == 1
    assert err.startswith("kun: error: ") and "line 5" in err and "4" in err and "6" in err
    code, out, err = _run("replay", "t_cli", "--home", str(tmp_path))
    assert code == 0 and "turn 1" in out
    assert "missing" in err and "seq 4" in err


def test_strict_replay_refuses_two_events_on_one_line(tmp_path: Path) -> None:
    path = _write(tmp_path, _thread())
    lines = _lines(path)
    lines[-2:] = [lines[-2] + lines[-1]]
    _put(path, lines)
    code, _, err = _run("replay", "t_cli", "--strict", "--home", str(tmp_path))
    assert code == 1 and err.count("\n") == 1 and f"line {len(lines)}" in err


def test_a_known_kind_at_a_newer_version_is_refused_by_strict_replay(tmp_path: Path) -> None:
    path = _write(tmp_path, _thread())
    lines = _lines(path)
    lines[-1] = lines[-1].replace(b'"turn_completed",', b'"turn_completed","v":7,')
    _put(path, lines)
    code, _, err = _run("replay", "t_cli", "--strict", "--home", str(tmp_path))
    assert code == 1 and err.count("\n") == 1 and "v7" in err
    code, _, err = _run("replay", "t_cli", "--home", str(tmp_path))
    assert code == 0 and "turn_completed v7 x1" in err


def test_an_event_that_breaks_the_projection_is_named_by_line(tmp_path: Path) -> None:
    path = _write(tmp_path, _thread())
    lines = _lines(path)
    lines[2] = lines[2].replace(b'"turn_id":"turn_', b'"turn_id":"nurn_', 1)
    _put(path, lines)
    code, _, err = _run("replay", "t_cli", "--strict", "--home", str(tmp_path))
    assert code == 1 and err.count("\n") == 1 and "line 3" in err and str(path) in err


@pytest.mark.parametrize("command", ["replay", "usage"])
def test_a_deeply_nested_line_is_one_error_line_not_a_traceback(
    tmp_path: Path, command: str
) -> None:
    path = _write(tmp_path, _thread())
    lines = _lines(path)
    lines.insert(3, DEEP)
    _put(path, lines)
    result = CliRunner().invoke(cli, [command, "t_cli", "--home", str(tmp_path)])
    assert result.exception is None or isinstance(result.exception, SystemExit)
    if command == "replay":
        assert result.exit_code == 1 and result.stderr.count("\n") == 1
        assert "line 4" in result.stderr and "nested" in result.stderr
    else:
        assert result.exit_code == 0 and "skipped 1 unreadable line" in result.stderr


def test_threads_lists_a_broken_thread_and_goes_on(tmp_path: Path) -> None:
    broken = _write(tmp_path, _thread("t_broken"))
    lines = _lines(broken)
    lines.insert(3, DEEP)
    _put(broken, lines)
    _write(tmp_path, _thread("t_fine", cost=0.5))
    (tmp_path / "threads" / "not a thread id").mkdir()
    (tmp_path / "threads" / "not a thread id" / "events.jsonl").write_bytes(b"")
    result = CliRunner().invoke(cli, ["threads", "--home", str(tmp_path)])
    assert result.exception is None, result.exception
    assert result.exit_code == 0
    rows = result.stdout.strip().split("\n")
    assert any(r.startswith("t_broken") and "unreadable" in r and "line 4" in r for r in rows)
    assert any(r.startswith("t_fine") and "$0.5000" in r for r in rows)


def test_usage_counts_a_duplicated_usage_line_once_and_says_so(tmp_path: Path) -> None:
    path = _write(tmp_path, _thread())
    lines = _lines(path)
    usage = next(i for i, line in enumerate(lines) if b'"kind":"usage"' in line)
    lines.insert(usage + 1, lines[usage])
    _put(path, lines)
    code, out, err = _run("usage", "t_cli", "--home", str(tmp_path))
    assert code == 0
    cost = next(line for line in out.split("\n") if line.startswith("cost (USD)"))
    assert cost.split()[2:] == ["0.250000"]
    assert "repeat" in err and "1" in err


def test_reconcile_skips_a_broken_thread_says_so_and_settles_the_others(tmp_path: Path) -> None:
    broken = _write(tmp_path, _open_turn("t_a_broken"))
    lines = _lines(broken)
    lines.insert(2, DEEP.replace(b"t_cli", b"t_a_broken"))
    _put(broken, lines)
    gap = _write(tmp_path, _open_turn("t_b_gap"))
    lines = _lines(gap)
    del lines[2]
    _put(gap, lines)
    _write(tmp_path, _open_turn("t_c_orphan"))
    result = CliRunner().invoke(cli, ["reconcile", "--home", str(tmp_path)])
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert result.stdout.split() == ["t_c_orphan"]
    assert "t_a_broken" in result.stderr and "t_b_gap" in result.stderr
    assert "Traceback" not in result.stderr
    assert result.exit_code == 1
    code, out, _ = _run("replay", "t_c_orphan", "--strict", "--home", str(tmp_path))
    assert code == 0 and "failed" in out
