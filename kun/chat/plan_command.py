"""``/plan [on|off]``: plan mode for the session's next turns, and the
thread's current plan.

Plan mode belongs to the session, not the thread: it is what the user wants
from the next messages ("think first, change nothing"), and each turn it
starts records ``turn_started.plan_mode``, so the log says which turns were
plans. ``/plan`` alone shows the mode and the thread's plan
(:func:`kun.app.live.plan_context`: none for a plan written for
another workspace).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kun.app.live import plan_context
from kun.errors import UserMistake

if TYPE_CHECKING:
    from kun.chat.session import ChatSession

__all__ = ["USAGE", "plan_command"]

USAGE = "/plan [on|off]"


async def plan_command(session: ChatSession, rest: str) -> None:
    word = rest.lower()
    if word in ("on", "off"):
        session.plan_mode = word == "on"
        if session.plan_mode:
            session.say(
                "plan mode on: the next turns investigate and write a plan, changing "
                "nothing (/plan off to carry it out)",
                "good",
            )
        else:
            session.say("plan mode off: the next turns may change files", "good")
        return
    if word:
        raise UserMistake(f"/plan takes on or off, not {rest!r}")
    session.say(f"plan mode {'on' if session.plan_mode else 'off'}")
    context = None
    if session.thread_id is not None:
        context = plan_context(await session.refresh())
    if context is None:
        session.say("no plan in this thread yet", "dim")
        return
    plan = context.plan
    session.say(f"plan: {plan.summary}" if plan.summary else "plan:")
    for row in plan.markdown.rstrip("\n").split("\n"):
        session.say(f"  {row}")
