"""A running turn's steering queue: text the user adds while the turn works.

Bounded (32 entries, 64 KB per turn) and sealed when the turn settles, so
steering never leaks into the next turn. The loop drains it at its two safe
points: before the first step and at the top of every step. Steering that
arrives while the final step streams is not lost: the loop sees it
(:meth:`SteeringQueue.close_if_empty`) and takes one more step instead of ending
the turn; the queue is sealed in the same breath as that decision, so a
push after it is refused as :class:`~kun.runtime.errors.TurnNotRunning` (the
answer a push gets once the turn has ended) rather than vanishing. A turn
that ends any other way closes the queue with :meth:`SteeringQueue.close` and
records what it still held, so steering that was accepted is always in the
log.
"""

from __future__ import annotations

from kun.runtime.errors import SteeringFull, TurnNotRunning

MAX_ENTRIES = 32
MAX_BYTES = 64 * 1024


class SteeringQueue:
    __slots__ = ("_bytes", "_entries", "_sealed", "thread_id", "turn_id")

    def __init__(self, turn_id: str, thread_id: str = "") -> None:
        self.turn_id = turn_id
        self.thread_id = thread_id
        self._entries: list[str] = []
        self._bytes = 0
        self._sealed = False

    def push(self, text: str) -> None:
        size = len(text.encode())
        if self._sealed:
            raise TurnNotRunning(self.thread_id, self.turn_id)
        if len(self._entries) >= MAX_ENTRIES:
            raise SteeringFull(self.turn_id, f"{MAX_ENTRIES} entries are waiting")
        if self._bytes + size > MAX_BYTES:
            raise SteeringFull(self.turn_id, f"more than {MAX_BYTES // 1024} KB is waiting")
        self._entries.append(text)
        self._bytes += size

    def drain(self) -> list[str]:
        entries, self._entries, self._bytes = self._entries, [], 0
        return entries

    def close_if_empty(self) -> bool:
        """Called when the loop would end the turn: ``False`` (and the turn
        goes on) if steering is waiting; otherwise the queue is sealed and
        ``True``. No await separates the check from the seal."""
        if self._entries:
            return False
        self._sealed = True
        return True

    def close(self) -> list[str]:
        """Seal the queue and return what it still held, for the turn to
        record before it settles."""
        self._sealed = True
        return self.drain()

    def seal(self) -> None:
        self._sealed = True
        self._entries.clear()
        self._bytes = 0
