"""The events a fork starts with, and what a fork point inside a turn cut.

A fork point may fall inside a turn (``kun fork --at-seq``, the web view's
fork at a moment of time travel, a fork of a thread whose turn is running).
The fork keeps that point exactly: the turn is copied as far as it had got
and ended there, settled as ``aborted`` with reason ``forked`` by the
fork's ``thread_forked`` (its work after the point stays with the source),
so the fork is settled and ready for a new turn. Snapping the point back to
the turn's start instead would silently drop what the user chose to keep
(a tool's result to continue from differently); :func:`cut_note` says in
one line what was cut, and ``--at-turn`` forks at whole turns.
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from kun.contracts import events as ev
from kun.domain.state import ThreadState, TurnState


def fork_events(
    source: Iterable[ev.Event], new_thread_id: str, up_to_seq: int, at: int
) -> list[ev.Event]:
    """A forked thread's initial log: the source's events up to ``up_to_seq``,
    re-addressed to ``new_thread_id`` (seqs kept, so positions stay comparable),
    then ``thread_forked`` recording the lineage and, when the point is inside
    a turn, the point's time (``source_at``), at which that turn ends. The fork is self-contained:
    replaying it never needs the source log. ``source`` may go on past the
    point: a ``thread_imported`` there means every copied event was recorded
    elsewhere, and the fork says so with its own after ``thread_forked``
    (its file checkpoints are never restored here either)."""
    copied: list[ev.Event] = []
    source_id = ""
    imported_later = False
    for event in source:
        if event.seq > up_to_seq:
            imported_later = imported_later or isinstance(event, ev.ThreadImported)
            continue
        source_id = event.thread_id
        copied.append(msgspec.structs.replace(event, thread_id=new_thread_id))
    last = copied[-1].seq if copied else 0
    copied.append(
        ev.ThreadForked(
            seq=last + 1,
            at=at,
            thread_id=new_thread_id,
            source_thread_id=source_id,
            source_seq=last,
            source_at=copied[-1].at if _cuts_a_turn(copied) else None,
        )
    )
    if imported_later and copied[:-1]:
        copied.append(ev.ThreadImported(seq=last + 2, at=at, thread_id=new_thread_id))
    return copied


_TURN_ENDS = (ev.TurnCompleted, ev.TurnFailed, ev.TurnAborted)


def _cuts_a_turn(copied: list[ev.Event]) -> bool:
    """Whether a turn is still open at the fork point. Only then is
    ``source_at`` written: a fork that cuts nothing is logged as before."""
    open_turns: set[str] = set()
    for event in copied:
        if isinstance(event, ev.TurnStarted | ev.TurnQueued):
            open_turns.add(event.turn_id or "")
        elif isinstance(event, _TURN_ENDS):
            open_turns.discard(event.turn_id or "")
    return bool(open_turns)


def cut_turns(state: ThreadState) -> list[tuple[int, TurnState]]:
    """The turns, with their numbers, still open at the fork point of the
    fork ``state``, which the fork ended there."""
    return [(n, t) for n, t in enumerate(state.turns, 1) if t.abort_reason == "forked"]


def cut_note(state: ThreadState) -> str | None:
    """One line saying which turn the fork point cut, or ``None``."""
    cut = cut_turns(state)
    origin = state.forked_from
    if not cut or origin is None:
        return None
    number, turn = cut[-1]
    return cut_line(origin.seq, number, turn.turn_id)


def cut_line(seq: int, number: int, turn_id: str) -> str:
    """The words of :func:`cut_note`, for a reader that holds the fork's
    projection as JSON (``kun --server``) rather than a ``ThreadState``."""
    return (
        f"seq {seq} is inside turn {number} ({turn_id}): the fork keeps it up to "
        "there and ends it as aborted (forked); use --at-turn to fork at whole turns"
    )
