"""Orphan reconciliation at start-up (SPEC §5).

Every turn still open in a thread that no live writer owns is settled as
``orphaned`` (see :mod:`kun.runtime.orphans` for what the model and the user
are told). Threads whose lock another live process holds are skipped (that
process is their writer), as are turns in flight here. Hidden side threads
are included. A thread that cannot be read or settled (a corrupt log, a
kind from a newer kun, a write the OS refuses) is skipped and reported: it
needs a person, not a guess, and it must not stop the threads after it from
being settled. Returns the ids of the threads it touched. A turn that was
only waiting for an approval or an answer is left waiting (durable
suspension). A file restore a killed rewind left without its outcome is
settled first (:mod:`kun.runtime.restore_recovery`). Turns left waiting in
a thread's queue (:mod:`kun.runtime.queue`) are then started, in order,
once its orphaned turn is settled.

A touched thread whose goal is still active is then resumed as after any
settled turn (SPEC §7.4: after a restart only these threads are resumed);
the timers live in the service and end with it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from msgspec import UNSET

from kun.domain.reduce import Projector
from kun.domain.suspension import suspended_turns
from kun.errors import KunError
from kun.runtime.orphans import orphan_events
from kun.runtime.restore_recovery import settle_restore
from kun.runtime.service import TurnService
from kun.store.errors import ThreadLocked

_log = logging.getLogger(__name__)


async def reconcile_orphaned_turns(
    service: TurnService,
    *,
    skipped: dict[str, str] | None = None,
    waiting: list[str] | None = None,
    threads: Iterable[str] | None = None,
    start_queued: bool = True,
) -> list[str]:
    """Settle every orphaned turn; return the threads touched. A thread that
    could not be reconciled is put in ``skipped`` with the reason (logged
    as a warning when no ``skipped`` is given). A turn that only waits for
    the user's answer (:mod:`kun.domain.suspension`) is not an orphan: it
    is left open and its thread put in ``waiting``, for the caller to
    re-arm (:mod:`kun.runtime.rearm`). ``threads``: only these (a dead
    worker's, on a shared store), else every thread of the store.
    ``start_queued``: start the next queued turn of a settled thread here
    (a worker that may not reach its workspace decides itself)."""
    store = service.recorder.store
    busy = service.in_flight()
    touched: list[str] = []
    for thread_id in store.list_threads() if threads is None else threads:
        if thread_id in busy:
            continue
        try:
            if not _needs_settling(service, thread_id):
                continue
            async with service.holding(thread_id):
                await service._open(thread_id)
                async with service._lock(thread_id):
                    restored = await settle_restore(service.recorder, thread_id)
                state = service.state(thread_id)
                running = service.running_turn(thread_id)
                suspended = set(suspended_turns(state)) - {running}
                if suspended and waiting is not None:
                    waiting.append(thread_id)
                events = orphan_events(state, suspended | ({running} if running else set()))
                if events:
                    await service.write(thread_id, *events)
                if start_queued and service.state(thread_id).queued_turns:
                    await service.advance(thread_id)
            if events or restored:
                touched.append(thread_id)
        except ThreadLocked:
            continue
        except (KunError, OSError) as exc:
            if skipped is None:
                _log.warning("not reconciling thread %s: %s", thread_id, exc)
            else:
                skipped[thread_id] = str(exc)
    await service.resumes.after_restart(touched)
    return touched


def _needs_settling(service: TurnService, thread_id: str) -> bool:
    """A read-only look: is any turn of the log still open, or a file
    restore without its outcome?"""
    if service.recorder.is_open(thread_id):
        state = service.recorder.state(thread_id)
    else:
        projector = Projector()
        projector.apply_all(service.recorder.store.read(thread_id, mode="tolerant"))
        state = projector.snapshot()
    return state.restoring is not UNSET or any(not t.settled for t in state.turns)
