"""The recorder's use of snapshots (issue 10, item 3): written at a clean exit
past a threshold, read on open, never trusted over the log."""

from __future__ import annotations

from pathlib import Path

import anyio
import msgspec
import pytest

from kun.domain.reduce import replay
from kun.runtime.recorder import EventRecorder
from kun.store.jsonl import JsonlEventStore
from kun.store.paths import log_path
from kun.store.snapshot import snapshot_path, unpack, write_snapshot
from tests.runtime.test_recorder import TID, created, logged, turn, warning

pytestmark = pytest.mark.anyio


def _snapshot_seq(home: Path) -> int:
    header, _ = unpack(snapshot_path(home, TID).read_bytes())
    return header.last_seq


async def test_a_clean_exit_snapshots_a_thread_past_the_threshold(tmp_path: Path) -> None:
    async with JsonlEventStore(tmp_path) as store:
        async with EventRecorder(store, snapshot_after=4) as recorder:
            await recorder.record(TID, created(), *turn())
        assert not snapshot_path(tmp_path, TID).exists()
        async with EventRecorder(store, snapshot_after=4) as recorder:
            await recorder.open(TID)
            await recorder.record(TID, warning())
        assert _snapshot_seq(tmp_path) == 4


async def test_open_starts_from_the_snapshot(tmp_path: Path) -> None:
    """A (deliberately wrong) title planted in the snapshot shows through:
    the prefix was not replayed."""
    async with JsonlEventStore(tmp_path) as store:
        async with EventRecorder(store) as recorder:
            await recorder.record(TID, created(), *turn())
        state = replay(logged(store))
        marked = msgspec.structs.replace(
            state, settings=msgspec.structs.replace(state.settings, title="planted")
        )
        assert write_snapshot(snapshot_path(tmp_path, TID), log_path(tmp_path, TID), marked)
        async with EventRecorder(store) as recorder:
            opened = await recorder.open(TID)
            assert opened.settings.title == "planted"
            (event,) = await recorder.record(TID, warning())
        assert event.seq == 4


async def test_snapshot_plus_tail_equals_the_log(tmp_path: Path) -> None:
    async with JsonlEventStore(tmp_path) as store:
        async with EventRecorder(store, snapshot_after=3) as recorder:
            await recorder.record(TID, created(), *turn())
        assert _snapshot_seq(tmp_path) == 3
        async with EventRecorder(store, snapshot_after=10**9) as recorder:
            await recorder.open(TID)
            await recorder.record(TID, *turn("turn_2"), warning())
        assert _snapshot_seq(tmp_path) == 3
        async with EventRecorder(store) as recorder:
            assert await recorder.open(TID) == replay(logged(store))


async def test_a_damaged_snapshot_is_ignored_on_open(tmp_path: Path) -> None:
    async with JsonlEventStore(tmp_path) as store:
        async with EventRecorder(store, snapshot_after=3) as recorder:
            await recorder.record(TID, created(), *turn())
        path = snapshot_path(tmp_path, TID)
        path.write_bytes(path.read_bytes()[:-10])
        async with EventRecorder(store) as recorder:
            assert await recorder.open(TID) == replay(logged(store))


async def test_an_exit_by_exception_writes_no_snapshot(tmp_path: Path) -> None:
    async with JsonlEventStore(tmp_path) as store:
        raised = False
        try:
            async with EventRecorder(store, snapshot_after=1) as recorder:
                await recorder.record(TID, created(), *turn())
                raise RuntimeError("boom")
        except* RuntimeError:
            raised = True
        assert raised
        assert logged(store)
        assert not snapshot_path(tmp_path, TID).exists()


async def test_a_thread_that_grows_is_snapshotted_in_the_background(tmp_path: Path) -> None:
    """Past ``snapshot_every`` new events a snapshot is written while the
    recorder runs (the exit writes none here: its threshold is out of reach),
    and opening from it equals the log."""
    async with JsonlEventStore(tmp_path) as store:
        async with EventRecorder(store, snapshot_after=10**9, snapshot_every=5) as recorder:
            await recorder.record(TID, created(), *turn())
            await recorder.record(TID, *turn("turn_2"))
            for _ in range(50):
                if snapshot_path(tmp_path, TID).exists():
                    break
                await anyio.sleep(0.01)
            assert _snapshot_seq(tmp_path) >= 5
            await recorder.record(TID, warning())
        async with EventRecorder(store, snapshot_after=10**9) as recorder:
            assert await recorder.open(TID) == replay(logged(store))
