"""The observer of one service: binds a trace to every turn it runs and
closes it when the turn ends (a :class:`~kun.runtime.context.TurnHooks`).

Binding happens when the run is built (:class:`~kun.runtime.context.TurnRun`
asks its tool host), so every kind of run is covered: a started turn, a
compaction, a re-armed one. The run's model is swapped for an
:class:`~kun.observe.model.ObservedModel` and its writer for one that notes
the step number of each ``pre_send`` stage (and the approvals and
questions asked) as it goes by; its approval and question gates for
:class:`~kun.observe.gates.ObservedGate`, which time each wait for the
user. The events written are the same objects, so the log does not change.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from kun.contracts import events as ev
from kun.domain.suspension import find_suspension
from kun.observe.gates import ObservedGate
from kun.observe.model import ObservedModel
from kun.observe.propagation import take_caller_trace
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
            caller=take_caller_trace() if self.spans is not None else None,
        )
        self._turns[(run.thread_id, run.turn_id)] = trace
        run.model = ObservedModel(run.model, trace)
        run.write = _noting_steps(run.write, trace)
        aborted, tool_of = partial(_aborted, run), partial(_tool_of, run)
        run.approvals = ObservedGate(run.approvals, trace, aborted=aborted, tool_of=tool_of)
        run.questions = ObservedGate(run.questions, trace, aborted=aborted, tool_of=tool_of)

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


def _aborted(run: TurnRun) -> bool:
    return run.aborted


def _tool_of(run: TurnRun, pending_id: str) -> str | None:
    """The tool a re-armed turn's approval is for."""
    state = run.state()
    turn = next((t for t in reversed(state.turns) if t.turn_id == run.turn_id), None)
    suspension = find_suspension(state, turn) if turn is not None else None
    if suspension is None or suspension.pending_id != pending_id:
        return None
    return suspension.call.name


def _noting_steps(write: Writer, trace: TurnTrace) -> Writer:
    async def noting(*events: ev.Event, durable: bool = True) -> list[ev.Event]:
        first = events[0] if events else None
        if isinstance(first, ev.PipelineStage):
            trace.step = first.step
        elif isinstance(first, ev.ApprovalRequested):
            trace.requested[first.approval_id] = first.tool_name
        elif isinstance(first, ev.UserInputRequested):
            trace.requested[first.request_id] = None
        return await write(*events, durable=durable)

    return noting
