"""A gate that reports each wait for the user's answer to its turn's trace.

It stands in for the run's approval and question gates
(:meth:`kun.observe.observer.Observer.bind_turn`) and waits on the real
gate: the answers, the claims and the log are the same. Everything but
:meth:`wait` is the real gate's, so a re-armed turn arms and disarms the
service's gate as it would unobserved. A wait cut off by cancellation is
``interrupted`` when the turn was interrupted, ``suspended`` otherwise (the
process is stopping: the turn waits on in the next one).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kun.observe.trace import TurnTrace, guarded
from kun.runtime.gates import Gate

__all__ = ["ObservedGate"]

_KINDS = {"approval": "approval", "user input": "question"}


class ObservedGate(Gate):
    def __init__(
        self,
        inner: Gate,
        trace: TurnTrace,
        *,
        aborted: Callable[[], bool],
        tool_of: Callable[[str], str | None],
    ) -> None:  # no super(): a view
        """``aborted``: whether the turn was interrupted; ``tool_of``: the
        tool a pending id waits for, from the thread's state (a re-armed
        turn's request is in an earlier process's log)."""
        self.inner = inner
        self.trace = trace
        self.aborted = aborted
        self.tool_of = tool_of

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def arm(self, pending_id: str, thread_id: str, turn_id: str) -> None:
        self.inner.arm(pending_id, thread_id, turn_id)

    def disarm(self, pending_id: str) -> None:
        self.inner.disarm(pending_id)

    async def wait(self, pending_id: str, thread_id: str, turn_id: str) -> tuple[str, str | None]:
        kind = _KINDS.get(self.inner.kind, self.inner.kind)
        tool = None if pending_id in self.trace.requested else guarded(self.tool_of, pending_id)
        wait = guarded(self.trace.wait_started, kind, pending_id, tool)
        if wait is None:
            return await self.inner.wait(pending_id, thread_id, turn_id)
        decision = "error"
        try:
            answer = await self.inner.wait(pending_id, thread_id, turn_id)
            decision = answer[0]
            return answer
        except BaseException:
            decision = "interrupted" if self.aborted() else "suspended"
            raise
        finally:
            guarded(self.trace.wait_ended, wait, decision)
