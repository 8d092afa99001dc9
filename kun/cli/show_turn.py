"""Show one running turn in the terminal until it ends, interrupting it
when a signal comes: the part ``kun run`` and ``kun run --goal`` share
(:mod:`kun.cli.run`, :mod:`kun.cli.run_goal`).

The caller owns the signal watch and sets ``signalled``; one set before
this is called (while the turn was being started) interrupts the turn as
soon as it is shown. An interrupted turn is recorded as aborted and its
status is the view's last line. While the turn is shown, ``kun steer`` and
``kun interrupt`` reach it from another terminal
(:mod:`kun.runtime.control_channel`).
"""

from __future__ import annotations

import anyio

from kun.cli.terminal import LiveView
from kun.domain.state import TurnState
from kun.runtime.control_channel import serve_control

__all__ = ["show_turn"]


async def show_turn(view: LiveView, after: int, turn_id: str, signalled: anyio.Event) -> TurnState:
    """Follow ``turn_id`` from seq ``after`` until it ends; the turn."""
    showing = anyio.CancelScope()

    async def interrupt() -> None:
        await signalled.wait()
        view.note("interrupting the turn...", "warn")
        await view.interrupt(turn_id)
        showing.cancel()

    async with serve_control(view.service, view.thread_id), anyio.create_task_group() as tg:
        tg.start_soon(interrupt)
        with showing:
            await view.follow(after, turn_id)
        turn = await view.service.wait_turn(view.thread_id, turn_id)
        tg.cancel_scope.cancel()
    if showing.cancel_called:
        view.sink.line(f"turn {turn.status}", "warn")
    return turn
