"""kun gc: a new log generation without hidden turns and loose side files,
the same visible turns, the old generation kept until --confirm, crash-safe."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kun.app.cleanup import GcUnsafe, collect, confirm, kept_generations
from kun.contracts import events as ev
from kun.contracts.items import ToolResult
from kun.contracts.threads import Goal
from kun.domain.state import ThreadState, TurnState
from kun.store.blobs import blob_ref
from kun.store.codec import encode_line
from kun.store.errors import ThreadLocked
from kun.store.paths import blobs_dir, lock_path, log_path, thread_dir
from kun.store.reader import read_log
from kun.store.replay import replay_log
from kun.store.snapshot import Snapshots, snapshot_path
from kun.testing.logbuilder import LogBuilder

GOLDEN = Path(__file__).parent.parent / "events" / "golden"
TID = "t_demo"


def write_log(home: Path, events: list[ev.Event], thread_id: str = TID) -> Path:
    path = log_path(home, thread_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(encode_line(e) for e in events))
    return path


def visible(state: ThreadState) -> list[TurnState]:
    """The visible turns without their seqs (gc renumbers)."""
    return [msgspec.structs.replace(t, started_seq=0) for t in state.visible_turns]


def turn(log: LogBuilder, text: str) -> str:
    turn_id = log.start_turn(text)
    log.assistant_text([f"answer to {text}"])
    log.usage(prompt_tokens=10, completion_tokens=3)
    log.complete()
    return turn_id


def rewound_log() -> LogBuilder:
    log = LogBuilder(TID)
    log.create(title="demo")
    turn(log, "one")
    two = turn(log, "two")
    turn(log, "three")
    log.rewind(two)
    turn(log, "four")
    return log


def test_gc_drops_hidden_turns_and_keeps_the_old_generation(tmp_path: Path) -> None:
    path = write_log(tmp_path, rewound_log().events)
    before = replay_log(path)
    old_bytes = path.read_bytes()
    report = collect(tmp_path, TID)
    assert report.turns == 2 and report.events > 0 and report.generation is not None
    after = replay_log(path)
    assert visible(after) == visible(before)
    assert len(after.turns) == 2 and all(t.hidden_by is None for t in after.turns)
    assert [e.seq for e in read_log(path)] == list(range(1, after.last_seq + 1))
    old_events = len(list(read_log(report.generation / "events.jsonl")))
    assert report.events == old_events - after.last_seq
    assert (report.generation / "events.jsonl").read_bytes() == old_bytes
    assert report.bytes_saved == len(old_bytes) - path.stat().st_size > 0
    assert kept_generations(tmp_path, TID) == [report.generation]
    assert confirm(tmp_path, TID) == len(old_bytes)
    assert kept_generations(tmp_path, TID) == [] and replay_log(path) == after
    assert collect(tmp_path, TID).generation is None  # nothing left to collect


def test_loose_side_files_go_and_referenced_ones_stay(tmp_path: Path) -> None:
    log = rewound_log()
    write_log(tmp_path, log.events)
    blobs = blobs_dir(tmp_path, TID)
    blobs.mkdir()
    loose = blob_ref(b"nobody names me")
    (blobs / loose.sha256).write_bytes(b"nobody names me")
    report = collect(tmp_path, TID)
    assert report.side_files == 1 and not (blobs / loose.sha256).exists()
    assert report.generation is not None
    assert (report.generation / "blobs" / loose.sha256).exists()


def test_an_undone_rewind_changes_nothing_visible(tmp_path: Path) -> None:
    log = LogBuilder(TID)
    log.create()
    one = turn(log, "one")
    log.undo_rewind(log.rewind(one))
    turn(log, "two")
    path = write_log(tmp_path, log.events)
    before = replay_log(path)
    report = collect(tmp_path, TID)
    assert report.turns == 0 and report.events == 2
    assert visible(replay_log(path)) == visible(before)


@pytest.mark.parametrize("golden", sorted(GOLDEN.glob("*.events.jsonl")), ids=lambda p: p.name)
def test_golden_logs_keep_their_visible_turns(tmp_path: Path, golden: Path) -> None:
    thread_id = "golden"
    path = log_path(tmp_path, thread_id)
    path.parent.mkdir(parents=True)
    shutil.copyfile(golden, path)
    before = replay_log(path)
    collect(tmp_path, thread_id)
    after = replay_log(path)
    assert visible(after) == visible(before)
    assert after.settings == before.settings
    assert all(t.hidden_by is None for t in after.turns)


@st.composite
def histories(draw: st.DrawFn) -> list[ev.Event]:
    log = LogBuilder(TID)
    log.create()
    turns: list[str] = []
    rewinds: list[int] = []
    for step in range(draw(st.integers(1, 12))):
        action = draw(st.sampled_from(["turn", "turn", "rewind", "undo"]))
        if action == "rewind" and turns:
            rewinds.append(log.rewind(draw(st.sampled_from(turns))))
        elif action == "undo" and rewinds:
            log.undo_rewind(rewinds.pop(draw(st.integers(0, len(rewinds) - 1))))
        else:
            turns.append(turn(log, f"t{step}"))
    return log.events


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(events=histories())
def test_gc_keeps_the_visible_projection_of_any_history(
    tmp_path_factory: pytest.TempPathFactory, events: list[ev.Event]
) -> None:
    home = tmp_path_factory.mktemp("home")
    path = write_log(home, events)
    before = replay_log(path)
    collect(home, TID)
    after = replay_log(path)
    assert visible(after) == visible(before) and after.settings == before.settings
    assert len(after.turns) == len(before.visible_turns)
    assert after.usage == before.usage  # hidden turns were paid for


class Crash(Exception):
    pass


@pytest.mark.parametrize("step", ["written", "linked", "replaced", "side_file_moved"])
def test_a_crash_at_any_step_leaves_a_valid_log(tmp_path: Path, step: str) -> None:
    path = write_log(tmp_path, rewound_log().events)
    blobs = blobs_dir(tmp_path, TID)
    blobs.mkdir()
    (blobs / blob_ref(b"loose").sha256).write_bytes(b"loose")
    before = replay_log(path)

    def crash(at: str) -> None:
        if at == step:
            raise Crash(at)

    with pytest.raises(Crash):
        collect(tmp_path, TID, fault=crash)
    assert visible(replay_log(path)) == visible(before)
    collect(tmp_path, TID)  # a later gc finishes the job
    after = replay_log(path)
    assert visible(after) == visible(before) and len(after.turns) == 2
    assert list(blobs.iterdir()) == []


def test_gc_refuses_while_another_writer_holds_the_thread(tmp_path: Path) -> None:
    path = write_log(tmp_path, rewound_log().events)
    old = path.read_bytes()
    script = (
        "import sys, time; from pathlib import Path; from kun.store.lock import lock_thread;"
        "lock_thread('t_demo', Path(sys.argv[1])); print('ok', flush=True); time.sleep(30)"
    )
    command = [sys.executable, "-c", script, str(lock_path(tmp_path, TID))]
    with subprocess.Popen(command, stdout=subprocess.PIPE) as holder:
        try:
            assert holder.stdout is not None and holder.stdout.readline().strip() == b"ok"
            with pytest.raises(ThreadLocked, match="being written by process"):
                collect(tmp_path, TID)
        finally:
            holder.kill()
    assert path.read_bytes() == old and not (thread_dir(tmp_path, TID) / "generations").exists()


def test_a_new_generation_that_would_differ_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_log(tmp_path, rewound_log().events)
    old = path.read_bytes()
    monkeypatch.setattr(
        "kun.app.cleanup._dropped", lambda e, hidden: isinstance(e, ev.TurnCompleted)
    )
    with pytest.raises(GcUnsafe):
        collect(tmp_path, TID)
    assert path.read_bytes() == old and kept_generations(tmp_path, TID) == []
    assert sorted(p.name for p in thread_dir(tmp_path, TID).iterdir()) == [
        "events.jsonl",
        "writer.lock",
    ]


def test_side_files_of_hidden_turns_go_and_those_of_visible_turns_stay(tmp_path: Path) -> None:
    log = LogBuilder(TID)
    log.create()
    refs = {}
    for name in ("kept", "hidden"):
        turn_id = log.start_turn(name)
        data = f"a big output of the {name} turn".encode()
        refs[name] = ref = blob_ref(data)
        log.item(ToolResult(id=log.next_id("item"), call_id=name, output="head", output_ref=ref))
        log.complete()
        blobs = blobs_dir(tmp_path, TID)
        blobs.mkdir(parents=True, exist_ok=True)
        (blobs / ref.sha256).write_bytes(data)
    log.rewind(turn_id)
    path = write_log(tmp_path, log.events)
    report = collect(tmp_path, TID)
    assert report.turns == 1 and report.side_files == 1
    assert [p.name for p in blobs_dir(tmp_path, TID).iterdir()] == [refs["kept"].sha256]
    assert report.generation is not None
    assert (report.generation / "blobs" / refs["hidden"].sha256).exists()
    assert len(replay_log(path).turns) == 1


def test_the_snapshot_of_the_old_log_is_removed(tmp_path: Path) -> None:
    path = write_log(tmp_path, rewound_log().events)
    snapshots = Snapshots(tmp_path)
    assert snapshots.save(replay_log(path))
    assert snapshot_path(tmp_path, TID).exists()
    collect(tmp_path, TID)
    assert not snapshot_path(tmp_path, TID).exists()
    assert Snapshots(tmp_path).resume(TID) is None


def test_a_goal_keeps_what_hidden_turns_spent_on_it(tmp_path: Path) -> None:
    log = LogBuilder(TID)
    log.create()
    log.update(goal=Goal(objective="ship it", created_at=log.at))
    turn(log, "one")
    two = turn(log, "two")
    log.rewind(two)
    turn(log, "three")
    path = write_log(tmp_path, log.events)
    before = replay_log(path)
    assert before.settings.goal is not None and before.settings.goal.tokens == 39
    collect(tmp_path, TID)
    after = replay_log(path)
    assert after.settings.goal == before.settings.goal and after.usage == before.usage
    assert len(after.turns) == 2
