"""Suspension points: a tool waits for the user's answer.

``Gate`` has one shape for approvals and questions. The waiting side registers
a pending id and awaits; the answering side *claims* the id first, so a
second answer (or an answer to an unknown id) is an ``AnswerConflict`` (HTTP
409); if persisting the answer fails, the claim is released and the answer can
be retried. On abort the waiter resolves ``cancelled`` before the cancellation
travels on, so no tool hangs forever.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import anyio

from kun.runtime.errors import AnswerConflict


@dataclass
class _Pending:
    thread_id: str
    turn_id: str
    done: anyio.Event = field(default_factory=anyio.Event)
    answer: tuple[str, str | None] | None = None
    claimed: bool = False


class Gate:
    """Pending answers of one kind (``approval`` or ``user input``)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._pending: dict[str, _Pending] = {}

    def pending_ids(self, turn_id: str | None = None) -> list[str]:
        """Ids waiting for an answer (of one turn, or all)."""
        return [k for k, p in self._pending.items() if turn_id is None or p.turn_id == turn_id]

    def owner(self, pending_id: str) -> tuple[str, str]:
        """``(thread_id, turn_id)`` of a pending id; ``AnswerConflict`` if none."""
        entry = self._pending.get(pending_id)
        if entry is None or entry.claimed:
            raise AnswerConflict(self.kind, pending_id)
        return entry.thread_id, entry.turn_id

    def arm(self, pending_id: str, thread_id: str, turn_id: str) -> None:
        """Take answers to ``pending_id`` from now on, before its waiter runs:
        a re-armed turn (:mod:`kun.runtime.rearm`) is answerable the moment
        it is re-armed, though its task has not started yet."""
        self._pending.setdefault(pending_id, _Pending(thread_id, turn_id))

    def disarm(self, pending_id: str) -> None:
        """Stop taking answers to an armed id whose waiter will not come
        (its turn ended first)."""
        entry = self._pending.get(pending_id)
        if entry is not None and not entry.claimed:
            del self._pending[pending_id]

    async def wait(self, pending_id: str, thread_id: str, turn_id: str) -> tuple[str, str | None]:
        """Await the answer ``(status, value)`` to ``pending_id`` (armed
        before, or from now). Cancelled: the entry is dropped (its item is
        settled by the turn's end)."""
        entry = self._pending.setdefault(pending_id, _Pending(thread_id, turn_id))
        try:
            await entry.done.wait()
        finally:
            self._pending.pop(pending_id, None)
        assert entry.answer is not None
        return entry.answer

    async def answer(
        self,
        pending_id: str,
        status: str,
        value: str | None,
        persist: Callable[[], Awaitable[None]],
    ) -> None:
        """Claim ``pending_id``, persist the answer, then wake the waiter."""
        entry = self._pending.get(pending_id)
        if entry is None or entry.claimed:
            raise AnswerConflict(self.kind, pending_id)
        entry.claimed = True
        try:
            await persist()
        except BaseException:
            entry.claimed = False
            raise
        entry.answer = (status, value)
        entry.done.set()
