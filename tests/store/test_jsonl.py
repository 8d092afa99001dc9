"""JSONL specifics: locking, torn-tail repair, group commit, write failures."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from kun.contracts.events import Event, LogRepaired
from kun.store import (
    CorruptLog,
    JsonlEventStore,
    LogWriteFailed,
    ReadReport,
    SeqConflict,
    ThreadLocked,
    log_path,
    read_log,
)
from kun.store import jsonl as jsonl_module
from kun.store.codec import encode_line
from tests.store.factories import TID, delta, warning, warnings

pytestmark = pytest.mark.anyio

HOLD_LOCK = """
import sys, anyio
from kun.store import JsonlEventStore
async def main():
    async with JsonlEventStore(sys.argv[1]) as store:
        await store.claim(sys.argv[2])
        print("ready", flush=True)
        sys.stdin.read()
anyio.run(main)
"""


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def log(home: Path) -> Path:
    path = log_path(home, TID)
    path.parent.mkdir(parents=True)
    return path


@pytest.fixture
def fsyncs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = jsonl_module._fsync

    def counting(fd: int) -> None:
        calls.append(fd)
        real(fd)

    monkeypatch.setattr(jsonl_module, "_fsync", counting)
    return calls


def put(path: Path, data: bytes) -> None:
    path.write_bytes(data)


def content(path: Path) -> bytes:
    return path.read_bytes()


# -- locking -----------------------------------------------------------------


async def test_a_second_store_in_this_process_is_locked_out(home: Path) -> None:
    async with JsonlEventStore(home) as first:
        await first.append(TID, [warning(1)], expected_seq=0)
        second = JsonlEventStore(home)
        with pytest.raises(ThreadLocked) as caught:
            await second.append(TID, [warning(2)], expected_seq=1)
        lock = log_path(home, TID).parent / "writer.lock"
        assert caught.value.lock_path == lock
        assert caught.value.holder_pid == os.getpid()
        assert str(lock) in str(caught.value)
        assert f"process {os.getpid()}" in str(caught.value)
        assert lock.read_text() == f"{os.getpid()}\n"
        assert [e.seq for e in second.read(TID)] == [1]
    async with JsonlEventStore(home) as third:
        assert await third.append(TID, [warning(2)], expected_seq=1) == 2


@pytest.mark.slow
def test_a_second_process_is_locked_out_until_the_first_exits(home: Path) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(home), TID],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )

    async def locked_out() -> None:
        async with JsonlEventStore(home) as store:
            with pytest.raises(ThreadLocked) as caught:
                await store.claim(TID)
        assert caught.value.holder_pid == child.pid
        assert f"process {child.pid}" in str(caught.value)
        assert "writer.lock" in str(caught.value)

    async def free() -> None:
        async with JsonlEventStore(home) as store:
            assert await store.claim(TID) == 0

    try:
        assert child.stdout is not None
        assert child.stdout.readline() == b"ready\n"
        anyio.run(locked_out)
        child.communicate(b"", timeout=10)
        anyio.run(free)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


# -- torn tails ----------------------------------------------------------------


async def test_a_truncated_last_line_is_repaired_and_recorded(home: Path, log: Path) -> None:
    torn = encode_line(warning(3))[:-9]
    put(log, b"".join(encode_line(e) for e in warnings(1, 2)) + torn)
    report = ReadReport()
    store = JsonlEventStore(home)
    assert [e.seq for e in store.read(TID, report=report)] == [1, 2]
    assert report.torn_tail is not None and report.torn_tail.line == 3
    assert await store.last_seq(TID) == 2
    async with store:
        assert await store.claim(TID) == 3
        assert await store.append(TID, [warning(4)], expected_seq=3) == 4
    after = ReadReport()
    events = list(JsonlEventStore(home).read(TID, report=after))
    assert after.torn_tail is None
    assert [e.seq for e in events] == [1, 2, 3, 4]
    repaired = events[2]
    assert isinstance(repaired, LogRepaired)
    assert (repaired.dropped_bytes, repaired.line, repaired.thread_id) == (len(torn), 3, TID)
    assert "no trailing newline" in repaired.reason
    assert repaired.preview.startswith('{"kind":"warning"')
    assert content(log).endswith(b"\n")


async def test_a_last_line_that_is_not_json_is_cut_off(home: Path, log: Path) -> None:
    put(log, encode_line(warning(1)) + b"\x00" * 40 + b"\n")
    async with JsonlEventStore(home) as store:
        assert await store.claim(TID) == 2
    events = list(JsonlEventStore(home).read(TID))
    assert events[0] == warning(1)
    assert isinstance(events[1], LogRepaired)
    assert (events[1].dropped_bytes, events[1].line) == (41, 2)
    assert "not valid JSON" in events[1].reason


async def test_a_log_that_is_all_torn_restarts_at_seq_one(home: Path, log: Path) -> None:
    put(log, b'{"kind":"thread_cre')
    async with JsonlEventStore(home) as store:
        assert await store.claim(TID) == 1
    [repaired] = list(JsonlEventStore(home).read(TID))
    assert isinstance(repaired, LogRepaired)
    assert (repaired.seq, repaired.line, repaired.dropped_bytes) == (1, 1, 19)


async def test_the_writer_will_not_append_after_a_bad_line(home: Path, log: Path) -> None:
    put(log, encode_line(warning(1)) + b"garbage\n" + b'{"torn')
    async with JsonlEventStore(home) as store:
        with pytest.raises(CorruptLog) as caught:
            await store.claim(TID)
        assert (caught.value.line, caught.value.last_good_seq) == (2, 1)
        with pytest.raises(CorruptLog):
            await store.last_seq(TID)
    assert content(log).endswith(b'{"torn')


async def test_the_writer_will_not_append_after_a_wrong_shape_last_line(
    home: Path, log: Path
) -> None:
    put(log, encode_line(warning(1)) + b'{"kind":"warning","seq":2}\n')
    async with JsonlEventStore(home) as store:
        with pytest.raises(CorruptLog) as caught:
            await store.claim(TID)
    assert caught.value.line == 2


async def test_an_unknown_last_kind_still_gives_the_last_seq(home: Path, log: Path) -> None:
    put(log, encode_line(warning(1)) + b'{"kind":"hologram","seq":2}\n')
    async with JsonlEventStore(home) as store:
        assert await store.claim(TID) == 2


ENDINGS = [
    b"",
    b"\n",
    b"\n\n \n",
    b"x",
    b"garbage\n",
    b"garbage\n\n",
    b"\ngarbage\n",
    b"garbage\n{partial",
    b"\x00" * 10,
    b'{"kind":"warning","seq":3}\n',
    b'{"kind":"hologram","seq":3}\n',
    b'{"kind":"hologram","seq":3}\n{"kind',
]


@pytest.mark.parametrize("ending", ENDINGS)
async def test_the_writer_and_the_reader_agree_on_how_a_log_ends(
    home: Path, log: Path, ending: bytes
) -> None:
    put(log, b"".join(encode_line(e) for e in warnings(1, 2)) + ending)
    report = ReadReport()
    try:
        good = [e.seq for e in read_log(log, mode="tolerant", report=report)]
    except CorruptLog as error:
        async with JsonlEventStore(home) as store:
            with pytest.raises(CorruptLog) as caught:
                await store.claim(TID)
        assert caught.value.line == error.line
        return
    last = 3 if b"hologram" in ending else 2
    async with JsonlEventStore(home) as store:
        claimed = await store.claim(TID)
    torn = report.torn_tail
    if torn is None:
        assert claimed == last
        return
    assert claimed == last + 1
    repaired = list(read_log(log, after=2, mode="tolerant"))[-1]
    assert isinstance(repaired, LogRepaired)
    assert (repaired.dropped_bytes, repaired.line) == (torn.size, torn.line)
    assert [e.seq for e in read_log(log, mode="tolerant")] == [*good, repaired.seq]


# -- durability ------------------------------------------------------------------


async def test_every_durable_append_is_fsynced(home: Path, fsyncs: list[int]) -> None:
    async with JsonlEventStore(home) as store:
        for seq in range(1, 6):
            await store.append(TID, [warning(seq)], expected_seq=seq - 1)
            assert len(fsyncs) == seq


async def test_deltas_are_group_committed_every_64(home: Path, fsyncs: list[int]) -> None:
    async with JsonlEventStore(home) as store:
        for seq in range(1, 64):
            await store.append(TID, [delta(seq)], expected_seq=seq - 1)
        assert fsyncs == []
        await store.append(TID, [delta(64)], expected_seq=63)
        assert len(fsyncs) == 1
        await store.append(TID, [delta(65)], expected_seq=64)
        assert len(fsyncs) == 1
    assert len(fsyncs) == 2


async def test_deltas_are_group_committed_after_5_ms(
    home: Path, fsyncs: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    now = [100.0]
    monkeypatch.setattr(jsonl_module, "_monotonic", lambda: now[0])
    async with JsonlEventStore(home) as store:
        await store.append(TID, [delta(1)], expected_seq=0)
        now[0] += 0.004
        await store.append(TID, [delta(2)], expected_seq=1)
        assert fsyncs == []
        now[0] += 0.0011
        await store.append(TID, [delta(3)], expected_seq=2)
        assert len(fsyncs) == 1
        now[0] += 1
        await store.append(TID, [delta(4)], expected_seq=3)
        assert len(fsyncs) == 1


async def test_a_durable_append_or_sync_flushes_pending_deltas(
    home: Path, fsyncs: list[int]
) -> None:
    async with JsonlEventStore(home) as store:
        await store.append(TID, [delta(1), delta(2)], expected_seq=0)
        await store.append(TID, [warning(3)], expected_seq=2)
        assert len(fsyncs) == 1
        await store.append(TID, [delta(4)], expected_seq=3)
        await store.sync(TID)
        await store.sync(TID)
        await store.sync("thr_never_written")
        assert len(fsyncs) == 2


async def test_a_batch_is_one_write(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = log_path(home, TID)
    batch: list[Event] = [delta(1), warning(2), delta(3)]
    writes: list[int] = []
    real_write = os.write

    def counting(fd: int, data: bytes) -> int:
        if os.path.samefile(f"/proc/self/fd/{fd}", path):
            writes.append(len(data))
        return real_write(fd, data)

    async with JsonlEventStore(home) as store:
        await store.claim(TID)
        monkeypatch.setattr(os, "write", counting)
        await store.append(TID, batch, expected_seq=0)
        monkeypatch.undo()
    assert writes == [sum(len(encode_line(e)) for e in batch)]


async def test_a_failed_fsync_closes_the_writer_and_a_retry_sees_the_truth(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing(fd: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    async with JsonlEventStore(home) as store:
        await store.append(TID, [warning(1)], expected_seq=0)
        monkeypatch.setattr(jsonl_module, "_fsync", failing)
        with pytest.raises(LogWriteFailed, match="Input/output error") as caught:
            await store.append(TID, [warning(2)], expected_seq=1)
        assert caught.value.path == log_path(home, TID)
        async with JsonlEventStore(home) as other:
            assert await other.claim(TID) == 2
        monkeypatch.undo()
        with pytest.raises(SeqConflict):
            await store.append(TID, [warning(2)], expected_seq=1)
        assert await store.append(TID, [warning(3)], expected_seq=2) == 3


# -- layout ----------------------------------------------------------------------


async def test_the_log_is_one_json_object_per_line(home: Path) -> None:
    async with JsonlEventStore(home) as store:
        await store.append(TID, warnings(1, 3), expected_seq=0)
    data = log_path(home, TID).read_bytes()
    assert data == b"".join(encode_line(e) for e in warnings(1, 3))


def test_list_threads_ignores_what_is_not_a_thread(home: Path) -> None:
    root = home / "threads"
    for name in ["thr_a", ".tmp", "no_log", "thr_b"]:
        (root / name).mkdir(parents=True)
    for name in ["thr_a", ".tmp", "thr_b"]:
        (root / name / "events.jsonl").write_bytes(b"")
    (root / "stray.txt").write_text("x")
    assert JsonlEventStore(home).list_threads() == ["thr_a", "thr_b"]
    assert JsonlEventStore(home / "nowhere").list_threads() == []


def test_home_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    monkeypatch.setenv("KUN_HOME", str(home))
    assert JsonlEventStore().home == home


async def test_discard_removes_the_thread_folder_under_its_lock(home: Path) -> None:
    async with JsonlEventStore(home) as store:
        await store.append(TID, warnings(1, 3), expected_seq=0)
        store.blobs(TID).put(b"side")
        async with JsonlEventStore(home) as other:
            with pytest.raises(ThreadLocked):
                await other.discard(TID)
        await store.discard(TID)
        assert not (home / "threads" / TID).exists() and not store.exists(TID)
        assert await store.append(TID, warnings(1, 1), expected_seq=0) == 1
