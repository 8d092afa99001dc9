"""Resume or rebase (SPEC §9): may a delegated turn continue its engine's
own session, or must it be handed kun's history again?

kun's log is the canonical history; an engine's session (the Claude Agent
SDK's transcript on disk) is only a cache of it. The cache is good while
the log, seen from the checkpoint the engine committed
(``delegated_checkpoint``), has only grown by that very session's turns. It
is stale, and the turn must be *rebased* (kun's history replayed as a
transcript), when anything else happened in between:

* there is no checkpoint (the thread's first delegated turn, or the last
  commit failed);
* it is another engine's, or another provider's (the user switched), or
  it was made in another workspace (an SDK session lives under its
  working directory);
* the thread was forked or imported after it (the session belongs to the
  source thread, or to another machine; two threads must never append to
  one session);
* a rewind, or the undo of one, came after it (the session remembers turns
  the log hides, or misses turns it shows again);
* the last turn before this one is not the checkpointed turn: a native turn
  (another provider answered), a compaction, or a delegated turn that
  failed or was aborted ran since, and the session knows nothing of it.

The decision depends on the thread's state alone, so a replay can tell why
each turn resumed or rebased (the ``delegated_runtime`` event records it).
Pure: no IO.
"""

from __future__ import annotations

from typing import Literal

import msgspec
from msgspec import UnsetType

from kun.contracts.items import Compaction
from kun.domain.state import QUEUE_CANCELLED, ThreadState, TurnState

__all__ = ["ResumeDecision", "resume_or_rebase"]


class ResumeDecision(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """``resumed`` with the ``session_id`` to resume, or ``rebased``;
    ``reason`` says why, for the ``delegated_runtime`` event."""

    mode: Literal["resumed", "rebased"]
    reason: str
    session_id: str | None = None


def _rebase(reason: str) -> ResumeDecision:
    return ResumeDecision(mode="rebased", reason=reason)


def resume_or_rebase(
    state: ThreadState, turn_id: str, *, engine: str, provider: str | None, workspace: str
) -> ResumeDecision:
    """How the turn ``turn_id`` of ``state`` starts on ``engine`` (see the
    module docstring for each reason)."""
    checkpoint = state.delegated_checkpoint
    if isinstance(checkpoint, UnsetType):
        return _rebase("no session checkpoint in this thread")
    if checkpoint.engine != engine:
        return _rebase(f"the checkpoint is {checkpoint.engine}'s, not {engine}'s")
    if checkpoint.provider != provider:
        return _rebase(f"the provider changed since the checkpoint ({checkpoint.provider})")
    if checkpoint.workspace != workspace:
        return _rebase("the workspace changed since the checkpoint")
    if state.forked_from is not None and checkpoint.seq <= state.forked_from.seq:
        return _rebase("the thread was forked after the checkpoint")
    imported = state.imported_through
    if not isinstance(imported, UnsetType) and imported >= checkpoint.seq:
        return _rebase("the thread was imported after the checkpoint")
    for rewind in state.rewinds:
        if rewind.seq > checkpoint.seq or (rewind.undone_at_seq or 0) > checkpoint.seq:
            return _rebase("the history was rewound after the checkpoint")
    before = _turns_before(state, turn_id)
    if not before or before[-1].turn_id != checkpoint.turn_id:
        since = _since(before, checkpoint.turn_id)
        if any(isinstance(item, Compaction) for turn in since for item in turn.items):
            return _rebase("the history was compacted after the checkpoint")
        return _rebase("turns ran outside the session after the checkpoint")
    if before[-1].status != "completed":
        return _rebase("the checkpointed turn did not complete")
    return ResumeDecision(
        mode="resumed",
        reason="nothing changed since the checkpoint",
        session_id=checkpoint.session_id,
    )


def _turns_before(state: ThreadState, turn_id: str) -> list[TurnState]:
    """The visible turns that happened before ``turn_id``: not itself, not
    a queued one, not one cancelled while it waited (it never ran)."""
    return [
        turn
        for turn in state.visible_turns
        if turn.turn_id != turn_id
        and turn.status != "queued"
        and turn.abort_reason != QUEUE_CANCELLED
    ]


def _since(turns: list[TurnState], turn_id: str | None) -> list[TurnState]:
    ids = [turn.turn_id for turn in turns]
    return turns[ids.index(turn_id) + 1 :] if turn_id in ids else turns
