"""Crash-test child: append events to one thread until killed.

``python crash_child.py HOME THREAD_ID`` claims the thread (repairing a torn
tail), then appends forever: mostly single durable events, sometimes a batch
of deltas plus a durable event, sometimes a 64 KiB event (so a kill can land
in the middle of a write). After each ``append`` returns it prints every seq
of the batch on its own line, flushed: those are the acknowledged seqs the
parent checks.
"""

from __future__ import annotations

import random
import sys

import anyio

from kun.contracts.events import AssistantTextDelta, Event, WarningEvent
from kun.store import JsonlEventStore


def batch(thread_id: str, first: int, rnd: random.Random) -> list[Event]:
    roll = rnd.random()
    if roll < 0.1:
        return [
            WarningEvent(seq=first, at=first, thread_id=thread_id, code="big", message="x" * 65536)
        ]
    if roll < 0.3:
        deltas: list[Event] = [
            AssistantTextDelta(
                seq=first + i, at=first, thread_id=thread_id, item_id="item", text=f"d{i}"
            )
            for i in range(rnd.randint(1, 5))
        ]
        seq = first + len(deltas)
        return [
            *deltas,
            WarningEvent(seq=seq, at=seq, thread_id=thread_id, code="c", message="after deltas"),
        ]
    return [WarningEvent(seq=first, at=first, thread_id=thread_id, code="c", message="m")]


async def main(home: str, thread_id: str) -> None:
    rnd = random.Random()
    async with JsonlEventStore(home) as store:
        last = await store.claim(thread_id)
        while True:
            events = batch(thread_id, last + 1, rnd)
            last = await store.append(thread_id, events, expected_seq=last)
            sys.stdout.write("".join(f"{e.seq}\n" for e in events))
            sys.stdout.flush()


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2])
