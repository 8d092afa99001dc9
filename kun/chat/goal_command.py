"""``/goal``: the user's hand on the thread's goal (SPEC §7.1).

The model may only report a goal complete or blocked; everything else is
the user's: setting one (``/goal TEXT`` replaces any goal, the user being
in charge), pausing, resuming, clearing, declaring it done, and its token
budget. A word that is a subcommand (``pause``, ``resume``, ``clear``,
``done``, ``budget N``) is read as one, never as an objective. Setting a
goal does not start a turn: the next message does, and then kun keeps going
across turns until the goal is complete or blocked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from kun.app.live import describe_goal
from kun.contracts.threads import Goal, GoalStatus
from kun.errors import UserMistake

if TYPE_CHECKING:
    from kun.chat.session import ChatSession

__all__ = ["USAGE", "goal_command"]

USAGE = "/goal [TEXT|pause|resume|done|clear]"

_MOVES: dict[str, tuple[tuple[GoalStatus, ...], Literal["active", "paused", "complete"], str]] = {
    "pause": (("active",), "paused", "paused: kun stops working on it until /goal resume"),
    "resume": (("paused", "blocked"), "active", "active again"),
    "done": (("active", "paused", "blocked"), "complete", "marked complete"),
}


class GoalCommandError(UserMistake):
    """``/goal`` used wrongly; the session shows the message."""


async def goal_command(session: ChatSession, rest: str) -> None:
    """Show, set or change the thread's goal."""
    word, _, arg = rest.partition(" ")
    word = word.lower()
    goal = await _goal(session)
    if not rest:
        session.say(describe_goal(goal) if goal else "no goal (set one: /goal TEXT)")
    elif word == "clear" and not arg:
        if goal is None:
            raise GoalCommandError("no goal to clear")
        await session.kun.change_goal(await session.thread(), clear=True)
        session.say("goal cleared", "good")
    elif word == "budget":
        await _budget(session, goal, arg.strip())
    elif word in _MOVES and not arg:
        await _move(session, goal, word)
    else:
        await session.kun.set_goal(await session.thread(), rest)
        replaced = f" (replaces {goal.objective!r})" if goal else ""
        session.say(f"goal set{replaced}; your next message starts work on it", "good")
    if session.thread_id is not None:
        await session.refresh()


async def _goal(session: ChatSession) -> Goal | None:
    if session.thread_id is None:
        return None
    return (await session.refresh()).settings.goal


async def _move(session: ChatSession, goal: Goal | None, word: str) -> None:
    sources, target, said = _MOVES[word]
    if goal is None:
        raise GoalCommandError(f"no goal to {word} (set one: /goal TEXT)")
    if goal.status not in sources:
        raise GoalCommandError(f"the goal is {goal.status}; /goal {word} needs it {sources[0]}")
    await session.kun.change_goal(await session.thread(), status=target)
    session.say(f"goal {said}", "good")


async def _budget(session: ChatSession, goal: Goal | None, arg: str) -> None:
    if goal is None:
        raise GoalCommandError("no goal to budget (set one: /goal TEXT)")
    digits = arg.replace(",", "").replace("_", "")
    thread_id = await session.thread()
    if arg.lower() == "none":
        await session.kun.change_goal(thread_id, clear_budget=True)
        budget = None
    elif digits.isdecimal() and int(digits) > 0:
        budget = int(digits)
        await session.kun.change_goal(thread_id, token_budget=budget)
    else:
        raise GoalCommandError("/goal budget takes a number of tokens (or none), e.g. 2000000")
    session.say(f"token budget {'none' if budget is None else f'{budget:,}'}", "good")
