"""Rewind, undo and fork as the CLI and the session both offer them, so
``kun rewind`` and ``/rewind`` name turns, and ``kun fork --at-turn`` and
``/fork`` cut, the same way (:mod:`kun.domain.turnref`).

A rewind or its undo first settles, as ``orphaned``, every turn the log
still shows open that no one here is running: the process that ran it died
(this service holds the thread's lock, so it is the only writer). Hidden
while still open, such a turn would leave the thread ``running`` with no
visible turn, and nothing would ever settle it; this is the rule
``start_turn`` already follows (SPEC §5). A file restore a killed process
left half done is settled first (:mod:`kun.runtime.restore_recovery`).
"""

from __future__ import annotations

from dataclasses import dataclass

from kun.contracts.events import FilesRestore
from kun.domain.fork import cut_note
from kun.domain.state import Rewind, ThreadState, TurnState
from kun.domain.turnref import fork_seq, latest_rewind, visible_turn
from kun.runtime.orphans import orphan_events
from kun.runtime.rearm import refuse_if_waiting
from kun.runtime.restore_recovery import settle_restore
from kun.runtime.service import TurnService

__all__ = [
    "Rewound",
    "fork_at",
    "fork_noting_cut",
    "rewind_before",
    "settled_thread_state",
    "thread_state",
    "undo_latest_rewind",
]


@dataclass(frozen=True)
class Rewound:
    number: int
    turn: TurnState
    seq: int
    hidden: int
    files: FilesRestore | None = None


async def thread_state(service: TurnService, thread_id: str) -> ThreadState:
    """The thread's state, as its writer (the lock taken if it was not)."""
    return await service.open_thread(thread_id)


async def settled_thread_state(service: TurnService, thread_id: str) -> ThreadState:
    """The thread's state once every turn a dead process left open is
    settled as orphaned (see the module docstring). Under the thread's lock,
    so a turn starting here is either running or not yet started."""
    await thread_state(service, thread_id)
    async with service._lock(thread_id):
        running = service.running_turn(thread_id)
        if running is None:
            refuse_if_waiting(service.state(thread_id), "rewind")
        await settle_restore(service.recorder, thread_id)
        orphans = orphan_events(service.state(thread_id), {running} if running else set())
        if orphans:
            await service.recorder.record(thread_id, *orphans)
    return service.state(thread_id)


async def rewind_before(
    service: TurnService, thread_id: str, ref: str, *, files: bool = False
) -> Rewound:
    """Hide the turn ``ref`` names (number as ``kun replay`` shows it, id or
    id prefix) and every later one; with ``files``, put the workspace's
    files back as before it too. A turn already hidden is refused."""
    async with service.holding(thread_id):
        number, turn = visible_turn(await settled_thread_state(service, thread_id), ref)
        seq = await service.rewind_thread(thread_id, turn.turn_id, files=files)
    rewind = next(r for r in service.state(thread_id).rewinds if r.seq == seq)
    restored = rewind.files if isinstance(rewind.files, FilesRestore) else None
    return Rewound(number, turn, seq, len(rewind.hidden_turn_ids), restored)


async def undo_latest_rewind(service: TurnService, thread_id: str) -> Rewind:
    """Bring back what the most recent rewind still in force hid (and the
    files it restored); the rewind as it is after the undo."""
    async with service.holding(thread_id):
        rewind = latest_rewind(await settled_thread_state(service, thread_id))
        await service.undo_rewind(thread_id, rewind.seq)
    return next(r for r in service.state(thread_id).rewinds if r.seq == rewind.seq)


async def fork_at(
    service: TurnService,
    thread_id: str,
    *,
    at_seq: int | None = None,
    at_turn: int | None = None,
) -> tuple[str, int]:
    """A fork of ``thread_id`` keeping its turns 1..``at_turn`` (or its log
    up to ``at_seq``; default: all of it); the new id and the seq it was
    taken at."""
    state = await service.recorder.view(thread_id)
    if at_turn is not None:
        at_seq = fork_seq(state, at_turn)
    new = await service.fork_thread(thread_id, at_seq)
    origin = service.state(new).forked_from
    return new, origin.seq if origin is not None else state.last_seq


async def fork_noting_cut(
    service: TurnService,
    thread_id: str,
    *,
    at_seq: int | None = None,
    at_turn: int | None = None,
) -> tuple[str, int, str | None]:
    """:func:`fork_at`, and the line saying which turn the fork point cut
    (``None`` when it fell between turns)."""
    new, seq = await fork_at(service, thread_id, at_seq=at_seq, at_turn=at_turn)
    return new, seq, cut_note(service.state(new))
