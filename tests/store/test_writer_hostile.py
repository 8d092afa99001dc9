"""The writer on hostile logs: it never cuts a line that holds events."""

from __future__ import annotations

from pathlib import Path

import pytest

from kun.contracts.events import Event, LogRepaired
from kun.store import CorruptLog, JsonlEventStore, log_path, read_log
from kun.store.codec import encode_line
from tests.store.factories import TID, warning, warnings

pytestmark = pytest.mark.anyio

DEEP = b'{"kind":"warning","seq":3,"at":1,"thread_id":"thr_test","code":"c","message":"m","x":'
DEEP += b"[" * 1000 + b"]" * 1000 + b"}"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def log(home: Path) -> Path:
    path = log_path(home, TID)
    path.parent.mkdir(parents=True)
    return path


def line(event: Event) -> bytes:
    return encode_line(event)[:-1]


def put(path: Path, data: bytes) -> None:
    path.write_bytes(data)


def content(path: Path) -> bytes:
    return path.read_bytes()


def good(n: int) -> bytes:
    return b"".join(encode_line(e) for e in warnings(1, n))


@pytest.mark.parametrize(
    "ending",
    [
        line(warning(3)) + line(warning(4)) + b"\n",
        line(warning(3)) + b" " + line(warning(4)) + b"\n",
        line(warning(3)) + line(warning(4)),
        line(warning(3)) + b'{"kind":"warn',
        b"garbage " + line(warning(3)) + b"\n",
        DEEP + b"\n",
        DEEP,
    ],
    ids=[
        "two-events",
        "two-events-spaced",
        "two-events-unterminated",
        "event-then-torn",
        "garbage-then-event",
        "deep",
        "deep-unterminated",
    ],
)
async def test_the_writer_refuses_to_cut_a_last_line_that_holds_events(
    home: Path, log: Path, ending: bytes
) -> None:
    before = good(2) + ending
    put(log, before)
    async with JsonlEventStore(home) as store:
        with pytest.raises(CorruptLog) as caught:
            await store.claim(TID)
    assert caught.value.line == 3
    assert content(log) == before


async def test_the_turn_completed_of_a_double_last_line_survives(home: Path, log: Path) -> None:
    """The issue's case: the last line holds an item and the turn's end."""
    put(log, good(2) + line(warning(3)) + line(warning(4, message="turn_completed")) + b"\n")
    async with JsonlEventStore(home) as store:
        with pytest.raises(CorruptLog):
            await store.append(TID, [warning(5)], expected_seq=4)
    assert b"turn_completed" in content(log)
    assert b"log_repaired" not in content(log)


async def test_a_torn_event_is_still_repaired(home: Path, log: Path) -> None:
    put(log, good(2) + line(warning(3))[:-5])
    async with JsonlEventStore(home) as store:
        assert await store.claim(TID) == 3
    events = list(read_log(log))
    assert isinstance(events[-1], LogRepaired)
