"""Hypothesis strategies for valid event logs.

``thread_logs`` drives a ``LogBuilder`` through random but legal steps, the way
the runtime would write them: turns with streamed text and reasoning, tool
calls (some in parallel, some crashing), approvals and questions answered or
left open, steering, usage, warnings, settles of every kind (including
``orphaned`` crashes mid-tool and aborts that discard), late events after a
settle, thread updates, rewinds and their undo.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import strategies as st

from kun.contracts import events as ev
from kun.contracts.items import Plan, ToolCall
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


def _in_turn_step(draw: st.DrawFn, sim: _Sim) -> None:
    b = sim.b
    available = [
        "text",
        "text_open",
        "reasoning",
        "call",
        "ask",
        "usage",
        "warning",
        "steer",
        "stage",
        "plan",
    ]
    if sim.calls:
        available += ["start", "start", "approval"]
    if sim.running:
        available += ["finish", "finish", "storm"]
    if sim.approvals:
        available += ["resolve"]
    if sim.inputs:
        available += ["answer"]
    action = draw(st.sampled_from(available))
    if action == "text":
        b.assistant_text(draw(pieces))
    elif action == "text_open":
        b.assistant_text(draw(pieces), complete=False)
    elif action == "reasoning":
        b.reasoning(draw(pieces), complete=draw(st.booleans()))
    elif action == "call":
        args = draw(st.dictionaries(st.sampled_from(["path", "q", "n"]), texts, max_size=2))
        sim.calls.append(
            b.tool_call(
                draw(st.sampled_from(["read", "grep", "bash"])),
                args,
                fragments=draw(st.integers(1, 3)),
            )
        )
    elif action == "start" and sim.calls:
        call = sim.calls.pop(draw(st.integers(0, len(sim.calls) - 1)))
        b.start_tool(call)
        sim.running.append(call)
    elif action == "finish" and sim.running:
        call = sim.running.pop(draw(st.integers(0, len(sim.running) - 1)))
        b.finish_tool(call, draw(texts), is_error=draw(st.booleans()))
    elif action == "approval" and sim.calls:
        sim.approvals.append(b.request_approval(sim.calls[-1], draw(texts)))
    elif action == "resolve" and sim.approvals:
        decision = draw(st.sampled_from(["approved", "denied", "cancelled"]))
        b.resolve_approval(sim.approvals.pop(0), decision)
    elif action == "ask":
        sim.inputs.append(b.ask_user(draw(texts), tuple(draw(st.lists(texts, max_size=2)))))
    elif action == "answer" and sim.inputs:
        b.answer_user(sim.inputs.pop(0), draw(st.one_of(st.none(), texts)))
    elif action == "usage":
        b.usage(
            prompt_tokens=draw(small),
            completion_tokens=draw(small),
            cache_hit_tokens=draw(small),
            cost_usd=draw(costs),
        )
    elif action == "warning":
        b.warning(draw(st.sampled_from(["output_truncated", "todo_sync_failed"])), draw(texts))
    elif action == "steer":
        b.steer(draw(texts))
        b.user_message(draw(texts), steered=True)
    elif action == "stage":
        b.stage(draw(st.sampled_from(["setup", "pre_send", "post_send", "response_received"])))
    elif action == "plan":
        b.item(Plan(id=b.next_id("plan"), markdown=draw(texts)))
    elif action == "storm" and sim.running:
        call = sim.running[-1]
        b.emit(
            ev.ToolStormSuppressed,
            turn_id=b.turn_id,
            call_id=call.call_id,
            name=call.name,
            repeats=3,
        )


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
    return sim.b.events
