"""A tool host that reports each call to its turn's trace.

A :class:`~kun.tools.host.ToolHost` (the turn holds one) that runs nothing
itself: :meth:`execute` times the real host's ``execute``, and every other
attribute is the real host's, so the catalogue, the effects and the
redaction are the same. It finds the turn by the call's context
(thread and turn ids); a call of a turn it does not know (none bound) is
run unobserved.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kun.observe.trace import guarded
from kun.tools.base import ToolContext, ToolOutput
from kun.tools.host import ToolHost

if TYPE_CHECKING:
    from kun.observe.observer import Observer
    from kun.runtime.context import TurnRun

__all__ = ["ObservedToolHost"]


class ObservedToolHost(ToolHost):
    def __init__(self, inner: ToolHost, observer: Observer) -> None:  # no super(): a view
        self.inner = inner
        self.observer = observer

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def bind_turn(self, run: TurnRun) -> None:
        """Called by every new :class:`~kun.runtime.context.TurnRun`."""
        self.observer.bind_turn(run)

    async def execute(self, name: str, arguments: bytes, ctx: ToolContext) -> ToolOutput:
        trace = self.observer.trace_of(ctx.thread_id, ctx.turn_id)
        if trace is None:
            return await self.inner.execute(name, arguments, ctx)
        call = guarded(trace.tool_started, name, ctx.call_id, self.inner.effect(name))
        if call is None:
            return await self.inner.execute(name, arguments, ctx)
        output: ToolOutput | None = None
        try:
            output = await self.inner.execute(name, arguments, ctx)
            return output
        finally:
            guarded(trace.tool_ended, call, output, arguments)
