"""The thread index (kun.app.thread_index) is a cache of what a full replay
of every log says: a hit lists exactly that, a changed log is re-read, and a
lost, corrupt or foreign index costs a rebuild, never a wrong listing."""

from __future__ import annotations

import tempfile
import threading
from pathlib import Path

import msgspec
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from kun.app.listing import ThreadSummary, list_threads, summarize, thread_ids
from kun.app.thread_index import index_path, indexed_summaries
from kun.entry import cli
from kun.testing.logbuilder import LogBuilder


def _builder(thread_id: str, turns: int = 1, *, hidden: bool = False) -> LogBuilder:
    offset = sum(map(ord, thread_id)) * 60_000
    b = LogBuilder(thread_id, start_at=1_767_225_600_000 + offset)
    b.create(workspace="/w", title=f"about {thread_id}", model="m1", hidden=hidden)
    for n in range(turns):
        _turn(b, n)
    return b


def _turn(b: LogBuilder, n: int) -> None:
    b.start_turn(f"prompt {n}")
    b.assistant_text([f"answer {n}"])
    b.usage(prompt_tokens=100, completion_tokens=5, cost_usd=0.5 if n % 2 else None)
    b.complete()


def _log(home: Path, thread_id: str) -> Path:
    return home / "threads" / thread_id / "events.jsonl"


def _write(home: Path, b: LogBuilder, *, start: int = 0) -> None:
    """Append the builder's events from index ``start`` on, as the store does."""
    path = _log(home, b.thread_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("ab") as f:
        f.write(b"".join(msgspec.json.encode(e) + b"\n" for e in b.events[start:]))


def _replayed(home: Path) -> list[ThreadSummary]:
    """What listing said before the index: every log replayed in full."""
    found = [summarize(home, t) for t in thread_ids(home)]
    return sorted(found, key=lambda s: (s.updated_at, s.thread_id), reverse=True)


def _listed(home: Path) -> list[ThreadSummary]:
    return list_threads(home, include_hidden=True, include_unreadable=True)


def _no_replay(home: Path, thread_id: str) -> ThreadSummary:
    raise AssertionError(f"{thread_id} was replayed although its log did not change")


def test_a_warm_index_lists_what_a_full_replay_does_without_replaying(tmp_path: Path) -> None:
    for n, name in enumerate(["t_a", "t_b", "t_c"]):
        _write(tmp_path, _builder(name, turns=n + 1, hidden=name == "t_c"))
    cold = _listed(tmp_path)
    assert cold == _replayed(tmp_path) and len(cold) == 3
    assert index_path(tmp_path).is_file()
    warm = indexed_summaries(tmp_path, _no_replay)
    assert sorted(warm, key=lambda s: s.thread_id) == sorted(cold, key=lambda s: s.thread_id)
    assert _listed(tmp_path) == cold


def test_a_log_appended_after_indexing_is_read_again(tmp_path: Path) -> None:
    b = _builder("t_grow", turns=1)
    _write(tmp_path, b)
    (before,) = _listed(tmp_path)
    start = len(b.events)
    _turn(b, 1)
    b.update(title="renamed")
    _write(tmp_path, b, start=start)
    (after,) = _listed(tmp_path)
    assert (before.turns, after.turns) == (1, 2)
    assert after.title == "renamed" and after.updated_at > before.updated_at
    assert [after] == _replayed(tmp_path)


def test_a_corrupt_deleted_or_foreign_index_is_rebuilt_silently(tmp_path: Path) -> None:
    for name in ("t_a", "t_b"):
        _write(tmp_path, _builder(name, turns=2))
    expected = _listed(tmp_path)
    index = index_path(tmp_path)
    good = index.read_bytes()
    for damage in (
        b"",
        b"{not json",
        good[: len(good) // 2],
        good.replace(b'"shape":"1/', b'"shape":"0/'),
    ):
        index.write_bytes(damage)
        assert _listed(tmp_path) == expected
        assert index.read_bytes() == good
    index.unlink()
    assert _listed(tmp_path) == expected and index.read_bytes() == good
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_an_entry_for_a_removed_thread_disappears(tmp_path: Path) -> None:
    for name in ("t_keep", "t_gone"):
        _write(tmp_path, _builder(name))
    assert {s.thread_id for s in _listed(tmp_path)} == {"t_keep", "t_gone"}
    _log(tmp_path, "t_gone").unlink()
    assert [s.thread_id for s in _listed(tmp_path)] == ["t_keep"]
    assert b"t_gone" not in index_path(tmp_path).read_bytes()


def test_a_broken_thread_is_still_listed_as_unreadable(tmp_path: Path) -> None:
    _write(tmp_path, _builder("t_fine"))
    _write(tmp_path, _builder("t_broken"))
    broken = _log(tmp_path, "t_broken")
    lines = broken.read_bytes().splitlines(keepends=True)
    lines.insert(3, b'{"kind":"warning","seq":9,"x":' + b"[" * 1000 + b"]" * 1000 + b"}\n")
    broken.write_bytes(b"".join(lines))
    for _ in range(2):  # cold, then from the index
        result = CliRunner().invoke(cli, ["threads", "--home", str(tmp_path)])
        assert result.exit_code == 0, result.stderr
        (line,) = [r for r in result.stdout.splitlines() if r.startswith("t_broken")]
        assert "(unreadable:" in line
    assert [s.thread_id for s in list_threads(tmp_path)] == ["t_fine"]


def test_a_home_without_threads_writes_no_index(tmp_path: Path) -> None:
    assert _listed(tmp_path) == []
    assert not index_path(tmp_path).exists()


_steps = st.lists(
    st.tuples(st.sampled_from(["grow", "remove", "corrupt", "list"]), st.integers(0, 2)),
    max_size=12,
)


@settings(max_examples=40, deadline=None)
@given(steps=_steps)
def test_whatever_happens_between_listings_the_index_agrees_with_replay(
    steps: list[tuple[str, int]],
) -> None:
    """Appends, removals, a damaged index, in any order: every listing is the
    one a full replay gives."""
    with tempfile.TemporaryDirectory() as raw:
        home = Path(raw)
        builders = {n: _builder(f"t_{n}") for n in range(3)}
        for b in builders.values():
            _write(home, b)
        for action, n in steps:
            b = builders[n]
            if action == "grow" and _log(home, b.thread_id).exists():
                start = len(b.events)
                _turn(b, len(b.events))
                _write(home, b, start=start)
            elif action == "remove":
                _log(home, b.thread_id).unlink(missing_ok=True)
            elif action == "corrupt" and index_path(home).exists():
                index_path(home).write_bytes(index_path(home).read_bytes()[: n * 50])
            assert _listed(home) == _replayed(home)


def test_listers_racing_each_other_and_a_writer_never_tear_the_index(tmp_path: Path) -> None:
    """Each lister replaces the index whole; whoever wins, the next listing
    re-verifies every entry against its log."""
    builders = [_builder(f"t_{n}") for n in range(4)]
    for b in builders:
        _write(tmp_path, b)
    errors: list[BaseException] = []
    stop = threading.Event()

    def lister() -> None:
        try:
            while not stop.is_set():
                assert len(_listed(tmp_path)) == len(builders)
                msgspec.json.decode(index_path(tmp_path).read_bytes())
        except BaseException as exc:
            errors.append(exc)

    workers = [threading.Thread(target=lister) for _ in range(3)]
    for w in workers:
        w.start()
    for n in range(20):
        b = builders[n % len(builders)]
        start = len(b.events)
        _turn(b, n)
        _write(tmp_path, b, start=start)
    stop.set()
    for w in workers:
        w.join()
    assert errors == []
    assert _listed(tmp_path) == _replayed(tmp_path)
    assert [s.turns for s in sorted(_listed(tmp_path), key=lambda s: s.thread_id)] == [6] * 4
