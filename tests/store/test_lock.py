"""``writer.lock``: the refused writer always learns who holds the thread."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from kun.store import JsonlEventStore, ThreadLocked, log_path
from tests.store.factories import TID

pytestmark = pytest.mark.anyio


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


async def test_the_lock_file_is_never_empty_while_a_pid_is_written(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lock = log_path(home, TID).parent / "writer.lock"
    lock.parent.mkdir(parents=True)
    lock.write_text("123456789\n")
    seen: list[bytes] = []
    real_ftruncate, real_pwrite = os.ftruncate, os.pwrite

    def ftruncate(fd: int, length: int) -> None:
        real_ftruncate(fd, length)
        seen.append(lock.read_bytes())

    def pwrite(fd: int, data: bytes, offset: int) -> int:
        written = real_pwrite(fd, data, offset)
        seen.append(lock.read_bytes())
        return written

    monkeypatch.setattr(os, "ftruncate", ftruncate)
    monkeypatch.setattr(os, "pwrite", pwrite)
    async with JsonlEventStore(home) as store:
        await store.claim(TID)
    assert seen and all(s.split(b"\n")[0].strip().isdigit() for s in seen), seen
    assert lock.read_text() == f"{os.getpid()}\n"


async def test_the_loser_waits_for_the_winner_to_write_its_pid(home: Path) -> None:
    """Between the winner's ``flock`` and its write the file is empty (a new
    file) or names a dead holder; the loser must not report that."""
    lock = log_path(home, TID).parent / "writer.lock"
    lock.parent.mkdir(parents=True)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        timer = threading.Timer(0.03, lambda: os.pwrite(fd, f"{os.getpid()}\n".encode(), 0))
        timer.start()
        async with JsonlEventStore(home) as store:
            with pytest.raises(ThreadLocked) as caught:
                await store.claim(TID)
        timer.join()
    finally:
        os.close(fd)
    assert caught.value.holder_pid == os.getpid()
    assert "unknown process" not in str(caught.value)


RACER = """
import sys, anyio
from kun.store import JsonlEventStore, ThreadLocked
async def main():
    async with JsonlEventStore(sys.argv[1]) as store:
        sys.stdout.write("go\\n"); sys.stdout.flush()
        sys.stdin.readline()
        try:
            await store.claim(sys.argv[2])
        except ThreadLocked as exc:
            print("lost", exc.holder_pid, flush=True)
        else:
            print("won", flush=True)
        sys.stdin.readline()
anyio.run(main)
"""


@pytest.mark.slow
def test_two_writers_starting_at_the_same_instant_name_each_other(home: Path) -> None:
    for round_ in range(10):
        thread = f"thr_race_{round_}"
        racers = [
            subprocess.Popen(
                [sys.executable, "-c", RACER, str(home), thread],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            for _ in range(2)
        ]
        try:
            for racer in racers:
                assert racer.stdout is not None and racer.stdout.readline() == "go\n"
            for racer in racers:
                assert racer.stdin is not None
                racer.stdin.write("\n")
                racer.stdin.flush()
            results = []
            for racer in racers:
                assert racer.stdout is not None
                results.append(racer.stdout.readline().split())
            winner = next(r for r, res in zip(racers, results, strict=True) if res == ["won"])
            lost = next(res for res in results if res[0] == "lost")
            assert lost == ["lost", str(winner.pid)], results
        finally:
            for racer in racers:
                racer.communicate("\n", timeout=10)
