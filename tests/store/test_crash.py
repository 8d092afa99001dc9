"""Kill a writing process at random moments; nothing acknowledged may be lost.

A child (``crash_child.py``) appends to one thread and prints each seq once
``append`` has returned. The parent SIGKILLs it at random moments, at least 30
times over the same thread, and after each kill checks with a fresh store:
every acknowledged seq is in the log, the log replays in strict mode with seqs
1..n, and a torn tail, if the kill left one, is repaired on the next claim and
recorded as ``log_repaired``. Torn tails written on purpose, once before a
child starts (the child repairs it, or the parent if the child dies first) and
once after a kill (the parent repairs it), make sure both repair paths run
whatever the timing.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from kun.contracts.events import LogRepaired
from kun.store import JsonlEventStore, ReadReport, log_path

CHILD = Path(__file__).with_name("crash_child.py")
ROUNDS = 32
TORN_BEFORE_START = 3
TORN_AFTER_KILL = 7
DELIBERATE_TORN = b'{"kind":"warning","seq":999999,"deliberately torn'
THREAD = "thr_crash"


def kill_child_at_random(home: Path, rnd: random.Random, *, after_acks: int) -> set[int]:
    """Run the child and SIGKILL it, return the acked seqs.

    With ``after_acks`` 0 the kill comes after a random delay from the
    start, so it can land in start-up or the claim's repair. Otherwise it
    comes right after that many acks have been read, plus a random few
    milliseconds, so it lands among appends however slow the machine is
    (a loaded CI machine can spend the whole random delay starting Python).
    """
    child = subprocess.Popen(
        [sys.executable, str(CHILD), str(home), THREAD], stdout=subprocess.PIPE
    )
    assert child.stdout is not None
    early = b""
    try:
        if after_acks:
            early = b"".join(child.stdout.readline() for _ in range(after_acks))
            time.sleep(rnd.uniform(0, 0.03))
            child.send_signal(signal.SIGKILL)
        else:
            child.wait(timeout=rnd.uniform(0.02, 0.4))
    except subprocess.TimeoutExpired:
        child.send_signal(signal.SIGKILL)
    out, _ = child.communicate(timeout=30)
    assert child.returncode == -signal.SIGKILL, f"child exited on its own: {child.returncode}"
    out = early + out
    complete = out[: out.rfind(b"\n") + 1]
    return {int(line) for line in complete.split()}


async def check_and_repair(home: Path, acked: set[int]) -> bool:
    """Check the log after a kill; repair a torn tail. True if there was one."""
    store = JsonlEventStore(home)
    if not store.exists(THREAD):
        assert not acked
        async with store:
            await store.claim(THREAD)
        return False
    report = ReadReport()
    seqs = [e.seq for e in store.read(THREAD, mode="strict", report=report)]
    assert seqs == list(range(1, len(seqs) + 1))
    assert acked <= set(seqs), f"lost acknowledged seqs {sorted(acked - set(seqs))[:5]}"
    torn = report.torn_tail
    async with store:
        last = await store.claim(THREAD)
    if torn is None:
        assert last == len(seqs)
        return False
    assert last == len(seqs) + 1
    repaired = list(JsonlEventStore(home).read(THREAD, after=len(seqs)))
    assert len(repaired) == 1
    assert isinstance(repaired[0], LogRepaired)
    assert (repaired[0].dropped_bytes, repaired[0].line) == (torn.size, torn.line)
    return True


@pytest.mark.slow
def test_sigkill_at_random_moments_loses_nothing_acknowledged(tmp_path: Path) -> None:
    rnd = random.Random()
    home = tmp_path / "home"
    log = log_path(home, THREAD)
    acked: set[int] = set()
    promised = 0
    for round_ in range(ROUNDS):
        after_acks = 0 if round_ % 2 else rnd.randint(1, 20)
        promised += after_acks
        if round_ == TORN_BEFORE_START:
            append_bytes(log, DELIBERATE_TORN)
        acked |= kill_child_at_random(home, rnd, after_acks=after_acks)
        if round_ == TORN_AFTER_KILL and log.read_bytes().endswith(b"\n"):
            append_bytes(log, DELIBERATE_TORN)
        torn = anyio.run(check_and_repair, home, acked)
        if round_ == TORN_AFTER_KILL:
            assert torn
    repairs = [
        e
        for e in JsonlEventStore(home).read(THREAD, mode="strict")
        if isinstance(e, LogRepaired) and "deliberately torn" in e.preview
    ]
    assert repairs
    assert all(e.dropped_bytes == len(DELIBERATE_TORN) for e in repairs)
    assert len(acked) >= promised > 0


def append_bytes(path: Path, data: bytes) -> None:
    with open(path, "ab") as file:
        file.write(data)
