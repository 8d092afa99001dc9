"""What a turn sent to a busy thread does first, by its ``multitask``
(:class:`~kun.app.requests.StartTurn`), in the in-process adapter.

``steer`` hands the text to the running turn (wherever it runs: here, or
another process on this machine through its control socket) and starts
nothing; ``interrupt`` stops the running turn and waits until it has
settled, so the new turn starts after it (behind turns already queued:
the queue keeps its order). When the turn ends before the steer or the
interrupt reaches it (:func:`~kun.app.live.steered_too_late`,
:func:`~kun.app.live.superseded`) the thread is simply no longer busy and
the turn starts as with no turn running. ``reject`` and ``enqueue`` are
decided by the TurnService under the thread's lock
(:mod:`kun.runtime.queue`).
"""

from __future__ import annotations

from kun.app.answers import TurnStarted
from kun.app.interface import Kun
from kun.app.live import steered_too_late, superseded
from kun.app.requests import StartTurn
from kun.domain.state import ThreadState
from kun.errors import KunError

__all__ = ["before_start"]


async def before_start(
    kun: Kun, thread_id: str, state: ThreadState, request: StartTurn
) -> TurnStarted | None:
    """The answer when the text went to the running turn (``steer``);
    ``None`` when the turn is to be started now."""
    running = state.running_turn
    if running is None or request.multitask not in ("steer", "interrupt"):
        return None
    if request.multitask == "steer":
        try:
            steered = await kun.steer(thread_id, running.turn_id, request.text)
        except KunError as exc:
            if steered_too_late(exc):
                return None
            raise
        return TurnStarted(
            thread_id=thread_id, turn_id=steered.turn_id, status="running", steered=True
        )
    try:
        await kun.interrupt(thread_id, running.turn_id)
    except KunError as exc:
        if not superseded(exc):
            raise
    return None
