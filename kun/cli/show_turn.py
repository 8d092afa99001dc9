"""Show one running turn in the terminal until it ends, interrupting it
when a signal comes: the part ``kun run`` and ``kun run --goal`` share
(:mod:`kun.cli.run`, :mod:`kun.cli.run_goal`).

The caller owns the signal watch and sets ``signalled``; one set before
this is called (while the turn was being started) interrupts the turn as
soon as it is shown. An interrupted turn is recorded as aborted and its
status is the view's last line.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio

from kun.app.interface import TurnState
from kun.cli.terminal import LiveView
from kun.contracts.events import Event

__all__ = ["show_turn"]


async def show_turn(
    view: LiveView, events: AsyncIterator[Event], turn_id: str, signalled: anyio.Event
) -> TurnState:
    """Follow ``turn_id`` on ``events`` until it ends; the turn."""
    showing = anyio.CancelScope()

    async def interrupt() -> None:
        await signalled.wait()
        view.note("interrupting the turn...", "warn")
        await view.interrupt(turn_id)
        showing.cancel()

    async with anyio.create_task_group() as tg:
        tg.start_soon(interrupt)
        with showing:
            await view.show_turn(events, turn_id)
        turn = await view.kun.wait_turn(view.thread_id, turn_id)
        tg.cancel_scope.cancel()
    if showing.cancel_called:
        view.sink.line(f"turn {turn.status}", "warn")
    return turn
