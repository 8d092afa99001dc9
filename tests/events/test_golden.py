"""Golden logs: every log kun ever released replays to the projection beside it.

A reducer change that alters a projection fails here with a diff of the
formatted JSON; a change to the scripts that would alter a released log fails
here too, because released logs are frozen (see ``events/CHANGELOG.md``).
"""

from __future__ import annotations

import difflib
import shutil
from pathlib import Path

import msgspec
import pytest

from kun.contracts import events as ev
from kun.contracts.events import KINDS, Event
from kun.domain.reduce import replay
from kun.domain.state import ThreadState
from kun.domain.tags import event_kind
from kun.domain.upcast import CURRENT_VERSION, upcast
from kun.testing.golden_threads import THREADS
from tests.events.scripts import load_script

make_golden = load_script("make_golden")

GOLDEN = make_golden.GOLDEN_DIR
LOG_SUFFIX: str = make_golden.LOG_SUFFIX
EXPECTED_SUFFIX: str = make_golden.EXPECTED_SUFFIX
LOGS = sorted(GOLDEN.glob(f"*{LOG_SUFFIX}"))
SCRIPTED = sorted(THREADS)
REGENERATE = f"`{make_golden.COMMAND}`"

_decoder = msgspec.json.Decoder(Event)


def _stem(log: Path) -> str:
    return log.name.removesuffix(LOG_SUFFIX)


def _lines(log: Path) -> list[bytes]:
    data = log.read_bytes()
    assert data.endswith(b"\n"), f"{log.name}: the last line does not end with \\n"
    return data.split(b"\n")[:-1]


def _decode(line: bytes) -> Event:
    """Strictly, after upcasting: how every reader sees an old line."""
    raw = msgspec.json.decode(line)
    current = upcast(raw)
    return _decoder.decode(line if current is raw else msgspec.json.encode(current))


def _events(log: Path) -> list[Event]:
    return [_decode(line) for line in _lines(log)]


def _diff(expected: bytes, actual: bytes, label: str) -> str:
    lines = difflib.unified_diff(
        expected.decode().splitlines(keepends=True),
        actual.decode().splitlines(keepends=True),
        fromfile=f"{label} (on disk)",
        tofile=f"{label} (now)",
    )
    return "".join(lines)


def test_the_golden_set_is_complete() -> None:
    stems = {_stem(log) for log in LOGS}
    assert set(SCRIPTED) <= stems, f"missing golden logs: run {REGENERATE}"
    for log in LOGS:
        assert log.with_name(_stem(log) + EXPECTED_SUFFIX).is_file(), (
            f"{log.name} has no projection"
        )
    for expected in GOLDEN.glob(f"*{EXPECTED_SUFFIX}"):
        stem = expected.name.removesuffix(EXPECTED_SUFFIX)
        assert stem in stems, f"{expected.name} has no log"


@pytest.mark.parametrize("log", LOGS, ids=_stem)
def test_log_replays_to_its_projection(log: Path) -> None:
    """Compared as ``ThreadState`` objects and as bytes. Both objects are
    decoded from the rendered JSON: a tool call's ``arguments`` is
    ``msgspec.Raw``, equal only byte for byte, and the indented rendering
    re-indents it, so the live snapshot would never equal the decoded file."""
    expected_path = log.with_name(_stem(log) + EXPECTED_SUFFIX)
    expected_bytes = expected_path.read_bytes()
    actual_bytes = make_golden.render_projection(replay(_events(log)))
    expected = msgspec.json.decode(expected_bytes, type=ThreadState)
    actual = msgspec.json.decode(actual_bytes, type=ThreadState)
    if actual != expected or actual_bytes != expected_bytes:
        pytest.fail(
            f"{log.name} no longer replays to {expected_path.name}. If the reducer change "
            f"is intended, run {REGENERATE} and review this diff with it:\n"
            + _diff(expected_bytes, actual_bytes, expected_path.name),
            pytrace=False,
        )


@pytest.mark.parametrize("log", LOGS, ids=_stem)
def test_log_is_well_formed(log: Path) -> None:
    lines = _lines(log)
    assert all(lines), f"{log.name} has an empty line"
    events = _events(log)
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert len({e.thread_id for e in events}) == 1
    assert event_kind(events[0]) == "thread_created"


@pytest.mark.parametrize("name", SCRIPTED)
def test_current_logs_round_trip_byte_exactly(name: str) -> None:
    for line in _lines(GOLDEN / f"{name}{LOG_SUFFIX}"):
        event = _decoder.decode(line)
        assert msgspec.json.encode(event) == line
        assert event.v == CURRENT_VERSION[event_kind(event)]


def test_generator_is_deterministic() -> None:
    assert make_golden.build() == make_golden.build()


def test_golden_files_are_what_the_generator_writes() -> None:
    stale = []
    for name, data in make_golden.build().items():
        on_disk = GOLDEN / name
        current = on_disk.read_bytes() if on_disk.is_file() else b""
        if current != data:
            stale.append(f"{name}:\n{_diff(current, data, name)[:4000]}")
    assert not stale, (
        "events/golden/ differs from the scripts in kun/testing/golden_threads.py. Released "
        "logs are frozen: freeze them under a versioned name first (events/CHANGELOG.md), then "
        f"run {REGENERATE}; use --force only for logs never released.\n" + "\n".join(stale)
    )


def test_generator_refuses_to_rewrite_a_released_log(tmp_path: Path) -> None:
    shutil.copytree(GOLDEN, tmp_path, dirs_exist_ok=True)
    tampered = tmp_path / f"aborted_turn{LOG_SUFFIX}"
    tampered.write_bytes(tampered.read_bytes().replace(b"Credit notes", b"Debit notes!"))
    frozen = tmp_path / f"orphaned_turn.v0{LOG_SUFFIX}"
    shutil.copy(tmp_path / f"orphaned_turn{LOG_SUFFIX}", frozen)

    writes, refused = make_golden.pending_writes(tmp_path)
    assert refused == [tampered]
    assert list(writes) == [tmp_path / f"orphaned_turn.v0{EXPECTED_SUFFIX}"]

    writes, refused = make_golden.pending_writes(tmp_path, force=True)
    assert refused == []
    assert tampered in writes


def test_everything_has_every_kind() -> None:
    events = _events(GOLDEN / f"everything{LOG_SUFFIX}")
    kinds = {event_kind(e) for e in events}
    later = {
        event_kind(e)
        for name in (
            "restore_recovered",
            "imported_thread",
            "queued_turns",
            "subagent_batch",
            "agent_sdk_turns",
        )
        for e in _events(GOLDEN / f"{name}{LOG_SUFFIX}")
    }
    assert kinds | later == KINDS, f"missing from everything: {sorted(KINDS - kinds - later)}"
    warnings = [e for e in events if isinstance(e, ev.WarningEvent)]
    assert {e.turn_id is None for e in warnings} == {True, False}
    updates = [e for e in events if isinstance(e, ev.ThreadUpdated)]
    assert any(e.goal and e.todos for e in updates)
