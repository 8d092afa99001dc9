"""``release``: a store stops being a thread's writer, and another process
(here another store instance) may write it; taking it back reads the tail
afresh, and the refused writer learns who holds the thread."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from kun.store import JsonlEventStore, SeqConflict, ThreadLocked
from kun.store.lock import set_holder
from tests.store.factories import TID, warnings

pytestmark = pytest.mark.anyio


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def serve_holder() -> Iterator[None]:
    set_holder("kun serve", "http://127.0.0.1:8765")
    try:
        yield
    finally:
        set_holder("")


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


async def test_release_closes_both_fds_and_frees_the_thread(home: Path) -> None:
    async with JsonlEventStore(home) as first, JsonlEventStore(home) as second:
        await first.append(TID, warnings(1, 2), expected_seq=0)
        held = _open_fds()
        with pytest.raises(ThreadLocked):
            await second.claim(TID)
        await first.release(TID)
        assert _open_fds() == held - 2
        assert not first.holds(TID)
        assert await second.append(TID, warnings(3, 3), expected_seq=2) == 3


async def test_taking_the_thread_back_counts_what_another_writer_appended(home: Path) -> None:
    async with JsonlEventStore(home) as first, JsonlEventStore(home) as second:
        await first.append(TID, warnings(1, 2), expected_seq=0)
        await first.release(TID)
        await second.append(TID, warnings(3, 4), expected_seq=2)
        await second.release(TID)
        with pytest.raises(SeqConflict):
            await first.append(TID, warnings(3, 3), expected_seq=2)
        assert await first.claim(TID) == 4
        assert await first.append(TID, warnings(5, 5), expected_seq=4) == 5
    assert [e.seq for e in JsonlEventStore(home).read(TID)] == [1, 2, 3, 4, 5]


async def test_release_of_a_thread_not_claimed_does_nothing(home: Path) -> None:
    async with JsonlEventStore(home) as store:
        await store.release(TID)
        assert not store.holds(TID)


async def test_a_thread_held_by_kun_serve_is_refused_naming_it_and_its_url(
    home: Path, serve_holder: None
) -> None:
    async with JsonlEventStore(home) as server:
        await server.claim(TID)
        set_holder("")
        async with JsonlEventStore(home) as terminal:
            with pytest.raises(ThreadLocked) as caught:
                await terminal.claim(TID)
    refused = caught.value
    assert (refused.holder_pid, refused.kind, refused.url) == (
        os.getpid(),
        "kun serve",
        "http://127.0.0.1:8765",
    )
    message = str(refused)
    assert f"kun serve (process {os.getpid()}, http://127.0.0.1:8765)" in message
    assert f"kun --server http://127.0.0.1:8765 run --thread {TID}" in message
    assert f"kun --server http://127.0.0.1:8765 resume {TID}" in message
    assert "\n" not in message


async def test_a_process_that_said_nothing_is_named_by_its_pid_only(home: Path) -> None:
    async with JsonlEventStore(home) as first, JsonlEventStore(home) as second:
        await first.claim(TID)
        with pytest.raises(ThreadLocked) as caught:
            await second.claim(TID)
    assert caught.value.kind == "" and f"process {os.getpid()}" in str(caught.value)
