"""Orphan reconciliation at start-up (SPEC §5).

Every turn still open in a thread that no live writer owns is settled as
``orphaned`` (see :mod:`kun.runtime.orphans` for what the model and the user
are told). Threads whose lock another live process holds are skipped (that
process is their writer), as are turns in flight here. Hidden side threads
are included. A thread whose log is corrupt is skipped and logged: it needs a
person, not a guess. Returns the ids of the threads it touched.
"""

from __future__ import annotations

import logging

from kun.domain.reduce import Projector
from kun.runtime.orphans import orphan_events
from kun.runtime.service import TurnService
from kun.store.errors import CorruptLog, ThreadLocked

_log = logging.getLogger(__name__)


async def reconcile_orphaned_turns(service: TurnService) -> list[str]:
    store = service.recorder.store
    busy = service.in_flight()
    touched: list[str] = []
    for thread_id in store.list_threads():
        if thread_id in busy or not _has_open_turn(service, thread_id):
            continue
        try:
            state = await service._open(thread_id)
        except ThreadLocked:
            continue
        running = service.running_turn(thread_id)
        events = orphan_events(state, {running} if running else set())
        if events:
            await service.write(thread_id, *events)
            touched.append(thread_id)
    return touched


def _has_open_turn(service: TurnService, thread_id: str) -> bool:
    """A read-only look: is any turn of the log still open?"""
    if service.recorder.is_open(thread_id):
        return any(not t.settled for t in service.recorder.state(thread_id).turns)
    projector = Projector()
    try:
        projector.apply_all(service.recorder.store.read(thread_id, mode="tolerant"))
    except CorruptLog as exc:
        _log.warning("not reconciling thread %s: %s", thread_id, exc)
        return False
    return any(not t.settled for t in projector.snapshot().turns)
