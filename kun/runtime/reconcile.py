"""Orphan reconciliation: settle turns whose process died (SPEC §5).

On start-up, every turn still open in a thread that no live writer owns is
failed with code ``orphaned``. A tool call that had started and never
finished gets a result saying its side effects may or may not have happened
(the model reads it; the user sees it) and is settled ``unknown_after_crash``:
it is never silently re-run. Threads whose lock another live process holds
are skipped (that process is their writer), as are turns in flight here.
Hidden side threads are included. Returns the ids of the threads it touched.
"""

from __future__ import annotations

from kun.contracts import events as ev
from kun.contracts.items import ErrorItem, ToolCall, ToolResult
from kun.domain.reduce import Projector
from kun.ids import new_id
from kun.runtime.context import draft
from kun.runtime.service import TurnService
from kun.store.errors import CorruptLog, ThreadLocked

UNKNOWN_AFTER_CRASH = (
    "kun stopped while this tool was running, so its effects may or may not have "
    "happened. Check the current state before running it again."
)
ORPHANED = "kun stopped while this turn was running; it was settled when kun started again"


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
        events: list[ev.Event] = []
        for turn in state.turns:
            if turn.settled:
                continue
            for item in turn.items:
                if isinstance(item, ToolCall) and item.id in turn.tools_in_flight:
                    result = ToolResult(
                        id=new_id("res"),
                        call_id=item.call_id,
                        name=item.name,
                        output=UNKNOWN_AFTER_CRASH,
                        is_error=True,
                        code="unknown_after_crash",
                    )
                    events.append(draft(ev.ItemCompleted, turn.turn_id, item=result))
            error = ErrorItem(id=new_id("err"), code="orphaned", message=ORPHANED)
            events.append(draft(ev.ItemCompleted, turn.turn_id, item=error))
            events.append(draft(ev.TurnFailed, turn.turn_id, code="orphaned", message=ORPHANED))
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
    except CorruptLog:
        return False
    return any(not t.settled for t in projector.snapshot().turns)
