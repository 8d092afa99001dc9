"""``append(durable=False)``: written at once, fsynced by the next durable
append or ``sync``, never by itself (the tool ledger's group commit)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kun.contracts import events as ev
from kun.store import jsonl
from kun.store.jsonl import JsonlEventStore

pytestmark = pytest.mark.anyio
TID = "t_deferred"


def _note(seq: int) -> ev.Event:
    return ev.ThreadUpdated(seq=seq, at=seq, thread_id=TID, title=f"t{seq}")


async def test_a_deferred_batch_is_written_then_synced_by_the_next_durable_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[int] = []
    real = jsonl._fsync

    def fsync(fd: int) -> None:
        real(fd)
        synced.append(fd)

    monkeypatch.setattr(jsonl, "_fsync", fsync)
    async with JsonlEventStore(tmp_path) as store:
        await store.claim(TID)
        synced.clear()
        await store.append(TID, [_note(1), _note(2)], expected_seq=0, durable=False)
        assert synced == []
        assert [e.seq for e in store.read(TID)] == [1, 2]
        await store.append(TID, [_note(3)], expected_seq=2)
        assert len(synced) == 1
        await store.append(TID, [_note(4)], expected_seq=3, durable=False)
        await store.sync(TID)
        assert len(synced) == 2
        await store.sync(TID)
        assert len(synced) == 2
