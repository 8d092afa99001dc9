"""Damage one byte or one line of a legal log: the readers and the writer must
either keep everything or say where the damage is.

The property for strict replay (``kun replay --strict``), precisely: after
deleting line ``k`` or changing one byte of line ``k`` (1-based), replay
either raises ``CorruptLog`` naming a line of the file at or after ``k``
(everything before the damage is intact, so nothing before it can be blamed),
or it succeeds, and then

- every line holds exactly one event and every event other than line ``k``'s
  is exactly the original one (a success never hides a merged, split or lost
  line);
- line ``k`` holds the original event, or another valid event with the same
  seq (a changed digit of a timestamp or a letter of a text is a legal log
  saying something else: no checksum can tell, and none is claimed), or it is
  the last line and is reported as a torn tail;
- the projection is the replay of exactly those events;
- deleting any line but the last is never a success (its seq is missing).

And for the writer: opening the damaged log for append either refuses with
``CorruptLog`` and leaves the file as it was, or keeps every event a reader
could take from it, and only ever cuts a torn tail that holds no event (a
whole last event that lacks its newline was never acknowledged, and is
recorded in ``log_repaired`` when cut).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import anyio
import msgspec
import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from kun.contracts import events as ev
from kun.domain.reduce import replay
from kun.store import CorruptLog, JsonlEventStore, ReadReport, log_path, read_log
from kun.store.codec import encode_line
from kun.store.replay import replay_log
from tests.properties.strategies import thread_logs

_decoder = msgspec.json.Decoder(ev.Event)


@pytest.fixture(scope="module")
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="kun-mutations-") as name:
        yield Path(name)


@st.composite
def damaged_logs(draw: st.DrawFn) -> tuple[list[ev.Event], bytes, int, str]:
    """A legal log, its damaged bytes, the 0-based index of the damaged line,
    and what was done. The last lines, and a line's first byte and its
    newline, are drawn more often (a newline turned into a blank joins two
    lines): that is where a reader and a writer must agree on what is torn."""
    events = draw(thread_logs(max_steps=20))
    lines = [encode_line(e) for e in events]
    last = len(lines) - 1
    k = draw(st.one_of(st.integers(0, last), st.sampled_from([last, max(last - 1, 0)])))
    how = draw(st.sampled_from(["delete", "change", "newline"]))
    if how == "delete":
        return events, b"".join(lines[:k] + lines[k + 1 :]), k, how
    start = sum(len(line) for line in lines[:k])
    end = len(lines[k]) - 1
    if how == "newline":
        position = start + end
        byte = draw(st.sampled_from(b" \t\r,;x{}"))
    else:
        position = start + draw(st.one_of(st.integers(0, end), st.just(0)))
        byte = draw(st.one_of(st.sampled_from(b'\n {}[]",:0123456789\\ae'), st.integers(0, 255)))
    blob = bytearray(b"".join(lines))
    if blob[position] == byte:
        byte ^= 1
    blob[position] = byte
    return events, bytes(blob), k, "change"


@given(damaged_logs())
def test_strict_replay_of_a_damaged_log_is_exact_or_names_a_line(
    workdir: Path, case: tuple[list[ev.Event], bytes, int, str]
) -> None:
    events, damaged, k, how = case
    path = workdir / events[0].thread_id / "events.jsonl"
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(damaged)
    report = ReadReport()
    try:
        state = replay_log(path, mode="strict", report=report)
    except CorruptLog as error:
        event(f"{how}: corrupt")
        assert error.path == path
        assert k + 1 <= error.line <= damaged.count(b"\n") + 1, (error, k)
        if how == "delete":
            assert error.line == k + 1
        return
    event(f"{how}: replayed")
    got = list(read_log(path, mode="strict"))
    assert state == replay(got)
    if how == "delete":
        assert k == len(events) - 1, "a line in the middle went missing silently"
        assert got == events[:-1]
        return
    if report.torn_tail is not None:
        assert k == len(events) - 1
        assert got == events[:-1]
        return
    assert damaged.count(b"\n") == len(got) == len(events)
    assert got[:k] == events[:k] and got[k + 1 :] == events[k + 1 :]
    assert got[k].seq == events[k].seq
    if got[k] == events[k]:
        assert state == replay(events)


@given(damaged_logs())
def test_opening_a_damaged_log_never_drops_a_line_holding_events(
    workdir: Path, case: tuple[list[ev.Event], bytes, int, str]
) -> None:
    events, damaged, _, _ = case
    home = workdir / "home"
    path = log_path(home, events[0].thread_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(damaged)
    before = ReadReport()
    readable = list(read_log(path, mode="skip_bad", report=before))

    async def claim() -> None:
        async with JsonlEventStore(home) as store:
            await store.claim(events[0].thread_id)

    try:
        anyio.run(claim)
    except CorruptLog:
        event("writer: refused")
        assert path.read_bytes() == damaged
        return
    after = path.read_bytes()
    torn = before.torn_tail
    if torn is None:
        event("writer: opened as is")
        assert after == damaged
        return
    event("writer: repaired")
    assert after[: torn.offset] == damaged[: torn.offset]
    dropped = damaged[torn.offset :]
    assert not _holds_events(dropped), dropped
    reread = list(read_log(path, mode="skip_bad"))
    assert reread[: len(readable)] == readable
    [repaired] = reread[len(readable) :]
    assert isinstance(repaired, ev.LogRepaired) and repaired.dropped_bytes == len(dropped)


def _holds_events(data: bytes) -> bool:
    """Whether ``data`` decodes as events, other than one whole event that
    only lacks its newline (an oracle independent of the store's own)."""
    if not data.endswith(b"\n"):
        try:
            _decoder.decode(data)
        except msgspec.DecodeError:
            pass
        else:
            return False
    try:
        return bool(_decoder.decode_lines(data))
    except (msgspec.DecodeError, RecursionError):
        return False
