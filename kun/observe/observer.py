"""The observer of one service: binds a trace to every turn it runs and
closes it when the turn ends (a :class:`~kun.runtime.context.TurnHooks`).

Binding happens when the run is built (:class:`~kun.runtime.context.TurnRun`
asks its tool host), so every kind of run is covered: a started turn, a
compaction, a re-armed one. The run's model is swapped for an
:class:`~kun.observe.model.ObservedModel` and its writer for one that notes
the step number of each ``pre_send`` stage as it goes by; the events
written are the same objects, so the log does not change.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from kun.contracts import events as ev
from kun.observe.model import ObservedModel
from kun.observe.sink import Sink
from kun.observe.spans import Spans
from kun.observe.tools import ObservedToolHost
from kun.observe.trace import TurnTrace, guarded
from kun.tools.host import ToolHost

if TYPE_CHECKING:
    from kun.runtime.context import TurnRun, Writer

__all__ = ["Observer"]


class Observer:
    def __init__(
        self,
        *,
        sink: Sink | None = None,
        spans: Spans | None = None,
        content: bool = False,
    ) -> None:
        self.sink = sink
        self.spans = spans
        self.content = content
        self._turns: dict[tuple[str, str], TurnTrace] = {}

    def watch(self, tools: ToolHost) -> ToolHost:
        """``tools`` as the service's host: every turn built on it is traced."""
        return ObservedToolHost(tools, self)

    def trace_of(self, thread_id: str, turn_id: str) -> TurnTrace | None:
        return self._turns.get((thread_id, turn_id))

    def bind_turn(self, run: TurnRun) -> None:
        guarded(self._bind, run)

    def _bind(self, run: TurnRun) -> None:
        redact: Callable[[str], str] | None = run.tools.redact if self.content else None
        trace = TurnTrace(
            thread_id=run.thread_id,
            turn_id=run.turn_id,
            provider=run.model.provider,
            model=run.model.model,
            sink=self.sink,
            spans=self.spans,
            redact=redact,
        )
        self._turns[(run.thread_id, run.turn_id)] = trace
        run.model = ObservedModel(run.model, trace)
        run.write = _noting_steps(run.write, trace)

    async def bookkeeping(self, run: TurnRun, status: str) -> None:
        return None

    async def turn_ended(self, run: TurnRun, status: str) -> None:
        trace = self._turns.pop((run.thread_id, run.turn_id), None)
        if trace is not None:
            guarded(trace.ended, status)

    def close(self) -> None:
        """End what is still open (turns cut off by shutdown), then close
        the sink and flush the spans."""
        for trace in list(self._turns.values()):
            guarded(trace.ended, "interrupted")
        self._turns.clear()
        if self.sink is not None:
            guarded(self.sink.close)
        if self.spans is not None:
            guarded(self.spans.close)


def _noting_steps(write: Writer, trace: TurnTrace) -> Writer:
    async def noting(*events: ev.Event, durable: bool = True) -> list[ev.Event]:
        first = events[0] if events else None
        if type(first) is ev.PipelineStage:
            trace.step = first.step
        return await write(*events, durable=durable)

    return noting
