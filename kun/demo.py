"""``kun demo``: a recorded multi-step thread, written through the real store.

Until the agent loop exists, the demo plays back the ``multi_step_tools``
golden thread: each event is appended to a fresh thread with the JSONL store
exactly as the runtime will append it (deltas group-committed, everything else
fsynced before the next event), then the thread is rebuilt from its log and
printed as ``kun replay`` would.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import anyio
import msgspec

from kun.contracts.events import Event
from kun.ids import new_id
from kun.store.jsonl import GROUP_COMMIT_KINDS, JsonlEventStore
from kun.store.paths import log_path
from kun.testing.golden_threads import multi_step_tools


@dataclass(frozen=True)
class DemoRun:
    thread_id: str
    path: Path
    events: int
    durable: int


def recorded_events(thread_id: str, now_ms: int) -> list[Event]:
    """The recorded thread, re-addressed to ``thread_id`` and moved to ``now_ms``."""
    events = multi_step_tools()
    shift = now_ms - events[0].at
    return [msgspec.structs.replace(e, thread_id=thread_id, at=e.at + shift) for e in events]


async def _write(home: Path, events: list[Event]) -> None:
    async with JsonlEventStore(home) as store:
        for event in events:
            await store.append(event.thread_id, [event], expected_seq=event.seq - 1)


def run_demo(home: Path, now_ms: int) -> DemoRun:
    thread_id = new_id("thr")
    events = recorded_events(thread_id, now_ms)
    anyio.run(_write, home, events)
    durable = sum(type(e).__struct_config__.tag not in GROUP_COMMIT_KINDS for e in events)
    return DemoRun(thread_id, log_path(home, thread_id), len(events), durable)
