"""Hypothesis strategies for valid event logs.

``thread_logs`` drives a ``LogBuilder`` through random but legal steps, the way
the runtime would write them: turns with streamed text and reasoning, tool
calls (some in parallel, some crashing), approvals and questions answered or
left open, steering, usage, warnings, settles of every kind (including
``orphaned`` crashes mid-tool and aborts that discard), late events after a
settle, thread updates, rewinds and their undo. Turns are queued while one
runs (``turn_queued``) and started in order once it settles, as the
TurnService does, or cancelled while they wait (``turn_aborted``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import strategies as st

from kun.contracts import events as ev
from kun.contracts.items import Plan, ToolCall, UserMessage
from kun.testing.logbuilder import LogBuilder

texts = st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=12)
pieces = st.lists(texts, min_size=1, max_size=4)
small = st.integers(min_value=0, max_value=5000)
costs = st.one_of(st.none(), st.floats(min_value=0, max_value=2, allow_nan=False))


@dataclass
class _Sim:
    b: LogBuilder
    calls: list[ToolCall] = field(default_factory=list)
    running: list[ToolCall] = field(default_factory=list)
    approvals: list[str] = field(default_factory=list)
    inputs: list[str] = field(default_factory=list)
    settled: list[str] = field(default_factory=list)
    rewinds: list[int] = field(default_factory=list)
    queued: list[str] = field(default_factory=list)


def _text(draw: st.DrawFn, sim: _Sim) -> None:
    sim.b.assistant_text(draw(pieces), complete=draw(st.booleans()))


def _reasoning(draw: st.DrawFn, sim: _Sim) -> None:
    sim.b.reasoning(draw(pieces), complete=draw(st.booleans()))


def _call(draw: st.DrawFn, sim: _Sim) -> None:
    args = draw(st.dictionaries(st.sampled_from(["path", "q", "n"]), texts, max_size=2))
    name = draw(st.sampled_from(["read", "grep", "bash"]))
    sim.calls.append(sim.b.tool_call(name, args, fragments=draw(st.integers(1, 3))))


def _start(draw: st.DrawFn, sim: _Sim) -> None:
    call = sim.calls.pop(draw(st.integers(0, len(sim.calls) - 1)))
    sim.b.start_tool(call)
    sim.running.append(call)


def _finish(draw: st.DrawFn, sim: _Sim) -> None:
    call = sim.running.pop(draw(st.integers(0, len(sim.running) - 1)))
    sim.b.finish_tool(call, draw(texts), is_error=draw(st.booleans()))


def _approval(draw: st.DrawFn, sim: _Sim) -> None:
    sim.approvals.append(sim.b.request_approval(sim.calls[-1], draw(texts)))


def _resolve(draw: st.DrawFn, sim: _Sim) -> None:
    decision = draw(st.sampled_from(["approved", "denied", "cancelled"]))
    sim.b.resolve_approval(sim.approvals.pop(0), decision)


def _ask(draw: st.DrawFn, sim: _Sim) -> None:
    sim.inputs.append(sim.b.ask_user(draw(texts), tuple(draw(st.lists(texts, max_size=2)))))


def _answer(draw: st.DrawFn, sim: _Sim) -> None:
    sim.b.answer_user(sim.inputs.pop(0), draw(st.one_of(st.none(), texts)))


def _usage(draw: st.DrawFn, sim: _Sim) -> None:
    sim.b.usage(
        prompt_tokens=draw(small),
        completion_tokens=draw(small),
        cache_hit_tokens=draw(small),
        cost_usd=draw(costs),
    )


def _warning(draw: st.DrawFn, sim: _Sim) -> None:
    sim.b.warning(draw(st.sampled_from(["output_truncated", "todo_sync_failed"])), draw(texts))


def _steer(draw: st.DrawFn, sim: _Sim) -> None:
    sim.b.steer(draw(texts))
    sim.b.user_message(draw(texts), steered=True)


def _stage(draw: st.DrawFn, sim: _Sim) -> None:
    sim.b.stage(draw(st.sampled_from(["setup", "pre_send", "post_send", "response_received"])))


def _plan(draw: st.DrawFn, sim: _Sim) -> None:
    sim.b.item(Plan(id=sim.b.next_id("plan"), markdown=draw(texts)))


def _storm(draw: st.DrawFn, sim: _Sim) -> None:
    call = sim.running[-1]
    sim.b.emit(
        ev.ToolStormSuppressed,
        turn_id=sim.b.turn_id,
        call_id=call.call_id,
        name=call.name,
        repeats=3,
    )


def _delegated(draw: st.DrawFn, sim: _Sim) -> None:
    """A running call hands its task to a side thread, whose approval may
    then be shown here (a copy naming the side thread)."""
    call = sim.running[-1]
    side = sim.b.next_id("thr")
    sim.b.emit(
        ev.SubagentStarted,
        turn_id=sim.b.turn_id,
        item_id=call.id,
        call_id=call.call_id,
        side_thread=side,
        agent=draw(st.sampled_from([None, "scout"])),
    )
    if draw(st.booleans()):
        approval = sim.b.next_id("apr")
        sim.b.emit(
            ev.ApprovalRequested,
            turn_id=sim.b.turn_id,
            approval_id=approval,
            call_id="child_call",
            tool_name="bash",
            side_thread=side,
        )
        sim.approvals.append(approval)


def _queue(draw: st.DrawFn, sim: _Sim) -> None:
    b = sim.b
    turn_id = b.next_id("turn")
    message = UserMessage(id=b.next_id("msg"), text=draw(texts))
    b.emit(
        ev.TurnQueued,
        turn_id=turn_id,
        message=message,
        model=draw(st.sampled_from([None, "m1"])),
        plan_mode=draw(st.booleans()),
    )
    sim.queued.append(turn_id)


def _cancel_queued(draw: st.DrawFn, sim: _Sim) -> None:
    turn_id = sim.queued.pop(draw(st.integers(0, len(sim.queued) - 1)))
    sim.b.emit(ev.TurnAborted, turn_id=turn_id, reason="cancelled")
    sim.settled.append(turn_id)


def _start_queued(sim: _Sim) -> None:
    turn_id = sim.queued.pop(0)
    sim.b.turn_id = turn_id
    sim.b.emit(ev.TurnStarted, turn_id=turn_id, model="m1")


_ALWAYS = [_text, _reasoning, _call, _ask, _usage, _warning, _steer, _stage, _plan, _queue]


def _in_turn_step(draw: st.DrawFn, sim: _Sim) -> None:
    available = list(_ALWAYS)
    if sim.queued:
        available.append(_cancel_queued)
    if sim.calls:
        available += [_start, _start, _approval]
    if sim.running:
        available += [_finish, _finish, _storm, _delegated]
    if sim.approvals:
        available.append(_resolve)
    if sim.inputs:
        available.append(_answer)
    draw(st.sampled_from(available))(draw, sim)


def _settle(draw: st.DrawFn, sim: _Sim) -> None:
    b = sim.b
    turn_id = b.turn_id
    assert turn_id is not None
    how = draw(st.sampled_from(["complete", "fail", "orphaned", "abort", "discard"]))
    if how == "complete":
        b.complete(draw(st.sampled_from(["stop", "length", None])))
    elif how == "fail":
        b.fail("provider_error", draw(texts))
    elif how == "orphaned":
        b.fail("orphaned", "the process that ran this turn is gone")
    else:
        b.abort(discard=how == "discard")
    sim.settled.append(turn_id)
    late_approvals = sim.approvals
    sim.calls, sim.running, sim.approvals, sim.inputs = [], [], [], []
    if draw(st.booleans()):
        late = draw(st.sampled_from(["delta", "complete", "resolve"]))
        if late == "delta":
            b.emit(ev.AssistantTextDelta, turn_id=turn_id, item_id="txt_late", text="late")
        elif late == "complete":
            b.emit(ev.TurnCompleted, turn_id=turn_id, stop_reason="stop")
        elif late_approvals:
            b.resolve_approval(late_approvals[0], "approved", turn_id=turn_id)


def _between_turns_step(draw: st.DrawFn, sim: _Sim) -> None:
    b = sim.b
    if sim.queued:
        if draw(st.integers(0, 3)):
            _start_queued(sim)
        else:
            _cancel_queued(draw, sim)
        return
    available = ["turn", "turn", "turn", "update", "usage", "warn"]
    if sim.settled:
        available.append("rewind")
    if sim.rewinds:
        available.append("undo")
    action = draw(st.sampled_from(available))
    if action == "turn":
        b.start_turn(draw(texts), model=draw(st.sampled_from([None, "m1"])))
    elif action == "update":
        b.update(title=draw(texts), approval_policy=draw(st.sampled_from(["never", "auto"])))
    elif action == "usage":
        b.usage(in_turn=False, prompt_tokens=draw(small), cost_usd=draw(costs))
    elif action == "warn":
        b.warning("title_failed", draw(texts), in_turn=False)
    elif action == "rewind" and sim.settled:
        sim.rewinds.append(b.rewind(draw(st.sampled_from(sim.settled))))
    elif action == "undo" and sim.rewinds:
        b.undo_rewind(sim.rewinds.pop(draw(st.integers(0, len(sim.rewinds) - 1))))


@st.composite
def thread_logs(draw: st.DrawFn, max_steps: int = 30, settle_all: bool = False) -> list[ev.Event]:
    """A legal log of one thread; with ``settle_all`` no turn is left open."""
    sim = _Sim(LogBuilder("t_prop"))
    sim.b.create(workspace="/w", title=draw(texts))
    for _ in range(draw(st.integers(0, max_steps))):
        if sim.b.turn_id is None:
            _between_turns_step(draw, sim)
        elif draw(st.integers(0, 9)) == 0:
            _settle(draw, sim)
        else:
            _in_turn_step(draw, sim)
    if settle_all and sim.b.turn_id is not None:
        _settle(draw, sim)
    while settle_all and sim.queued:
        _cancel_queued(draw, sim)
    return sim.b.events
