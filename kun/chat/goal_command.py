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

import time
from typing import TYPE_CHECKING

import msgspec

from kun.contracts.threads import Goal, GoalStatus, ThreadSettings
from kun.domain.goals import describe_goal
from kun.errors import UserMistake

if TYPE_CHECKING:
    from kun.chat.session import ChatSession

__all__ = ["USAGE", "goal_command"]

USAGE = "/goal [TEXT|pause|resume|done|clear]"

_MOVES: dict[str, tuple[tuple[GoalStatus, ...], GoalStatus, str]] = {
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
    goal = _goal(session)
    if not rest:
        session.say(describe_goal(goal) if goal else "no goal (set one: /goal TEXT)")
    elif word == "clear" and not arg:
        if goal is None:
            raise GoalCommandError("no goal to clear")
        await _write(session, None)
        session.say("goal cleared", "good")
    elif word == "budget":
        await _budget(session, goal, arg.strip())
    elif word in _MOVES and not arg:
        await _move(session, goal, word)
    else:
        created = Goal(objective=rest, created_at=time.time_ns() // 1_000_000)
        await _write(session, created)
        replaced = f" (replaces {goal.objective!r})" if goal else ""
        session.say(f"goal set{replaced}; your next message starts work on it", "good")


def _goal(session: ChatSession) -> Goal | None:
    if session.thread_id is None:
        return None
    return session.service.state(session.thread_id).settings.goal


async def _move(session: ChatSession, goal: Goal | None, word: str) -> None:
    sources, target, said = _MOVES[word]
    if goal is None:
        raise GoalCommandError(f"no goal to {word} (set one: /goal TEXT)")
    if goal.status not in sources:
        raise GoalCommandError(f"the goal is {goal.status}; /goal {word} needs it {sources[0]}")
    await _write(session, msgspec.structs.replace(goal, status=target))
    session.say(f"goal {said}", "good")


async def _budget(session: ChatSession, goal: Goal | None, arg: str) -> None:
    if goal is None:
        raise GoalCommandError("no goal to budget (set one: /goal TEXT)")
    digits = arg.replace(",", "").replace("_", "")
    if arg.lower() == "none":
        budget = None
    elif digits.isdecimal() and int(digits) > 0:
        budget = int(digits)
    else:
        raise GoalCommandError("/goal budget takes a number of tokens (or none), e.g. 2000000")
    await _write(session, msgspec.structs.replace(goal, token_budget=budget))
    session.say(f"token budget {'none' if budget is None else f'{budget:,}'}", "good")


async def _write(session: ChatSession, goal: Goal | None) -> None:
    """Record the goal; a goal set before the first message creates the
    thread, as the first message would."""
    if session.thread_id is None:
        settings = ThreadSettings(
            workspace=str(session.workspace.resolve()),
            provider=session.model.provider,
            model=session.model.model,
            approval_policy=session.approval,
        )
        session.switch_thread(await session.service.create_thread(settings))
    assert session.thread_id is not None
    await session.service.update_thread(session.thread_id, goal=goal)
