"""Naming a turn the way a person does, and the points a fork or an undo
starts from. Pure: takes a ``ThreadState``.

A turn is named by its number as ``kun replay`` shows it (1-based, in start
order, hidden turns counted: the numbers of a thread never shift), by its
id, or by an unambiguous prefix of its id.
"""

from __future__ import annotations

from kun.domain.state import Rewind, ThreadState, TurnState
from kun.domain.transcript import plural
from kun.errors import UserMistake

__all__ = [
    "NoSuchTurn",
    "NothingToUndo",
    "TurnAlreadyHidden",
    "find_turn",
    "fork_seq",
    "hidden_span",
    "latest_rewind",
    "visible_turn",
]


class NoSuchTurn(UserMistake):
    pass


class NothingToUndo(UserMistake):
    pass


class TurnAlreadyHidden(UserMistake):
    """A rewind named a turn an earlier rewind hides: it would hide
    nothing new, or only later turns the user did not name."""


def visible_turn(state: ThreadState, ref: str) -> tuple[int, TurnState]:
    """:func:`find_turn`, refusing a turn a rewind already hides. A rewind
    everywhere (``kun rewind T N``, ``/rewind N``, the API's
    ``before_turn``) hides turn N, as ``kun replay`` numbers it, and every
    later turn."""
    number, turn = find_turn(state, ref)
    if turn.hidden_by is not None:
        raise TurnAlreadyHidden(
            f"turn {number} of thread {state.thread_id!r} is already hidden (by the rewind "
            f"at seq {turn.hidden_by}); undo that rewind to bring it back"
        )
    return number, turn


def hidden_span(number: int, hidden: int) -> str:
    """What a rewind from turn ``number`` that hid ``hidden`` turns hid,
    in words: ``turn 3``, or ``turn 3 and the 2 later turns``."""
    later = hidden - 1
    if later <= 0:
        return f"turn {number}"
    return f"turn {number} and the {later} later turn" + ("" if later == 1 else "s")


def find_turn(state: ThreadState, ref: str) -> tuple[int, TurnState]:
    """The turn ``ref`` names, with its number."""
    ref = ref.strip()
    turns = state.turns
    if ref.isdecimal():
        number = int(ref)
        if not 1 <= number <= len(turns):
            raise NoSuchTurn(
                f"thread {state.thread_id!r} has {plural(len(turns), 'turn')}: "
                f"there is no turn {number}"
            )
        return number, turns[number - 1]
    matches = [(n, t) for n, t in enumerate(turns, 1) if t.turn_id == ref]
    matches = matches or [(n, t) for n, t in enumerate(turns, 1) if t.turn_id.startswith(ref)]
    if len(matches) == 1 and ref:
        return matches[0]
    if len(matches) > 1:
        raise NoSuchTurn(f"turn id {ref!r} is ambiguous in thread {state.thread_id!r}")
    missing = NoSuchTurn(
        f"thread {state.thread_id!r} has no turn {ref!r} "
        f"(give a turn number or id as kun replay {state.thread_id} shows them)"
    )
    missing.suggests = ("replay", state.thread_id)
    raise missing


def fork_seq(state: ThreadState, at_turn: int) -> int:
    """The seq a fork that keeps turns 1..``at_turn`` is taken at: the last
    event before the next turn starts (so changes made between the turns,
    a model switch or a title, come along), or the end of the log."""
    if not 1 <= at_turn <= len(state.turns):
        raise NoSuchTurn(
            f"thread {state.thread_id!r} has {len(state.turns)} turns: cannot fork at turn "
            f"{at_turn}"
        )
    if at_turn == len(state.turns):
        return state.last_seq
    return state.turns[at_turn].started_seq - 1


def latest_rewind(state: ThreadState) -> Rewind:
    """The most recent rewind still in force (what an undo brings back)."""
    live = [r for r in state.rewinds if r.undone_at_seq is None]
    if not live:
        raise NothingToUndo(f"thread {state.thread_id!r} has no rewind to undo")
    return live[-1]
