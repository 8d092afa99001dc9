"""For random threads driven the way the loop drives compaction (before
each model step: estimate the request, over ``compact_at`` of the window
plan a compaction, summarise, record it; rewinds now and then), every
request keeps each tool call with its result and never exceeds the window
estimate, every summarising request fits the window too, and the log
replays to the history that was sent.

Turns are bounded (at most :data:`STEPS` steps of :data:`CALLS` calls with
outputs of :data:`OUTPUT_WORDS` words): the open turn is never summarised,
so a single turn larger than the window could not fit whatever kun did.
"""

from __future__ import annotations

import random

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from kun.contracts import events as ev
from kun.contracts.items import Item, ToolCall, ToolResult
from kun.contracts.model import ModelRequest
from kun.domain.compaction import (
    compaction_item,
    estimate_request_tokens,
    plan_compaction,
    should_compact,
    summary_request,
    visible_history,
)
from kun.domain.history import ModelEntry, repair_history
from kun.domain.reduce import Projector, replay
from kun.domain.state import TurnState
from kun.testing.logbuilder import LogBuilder

WINDOW = 1200
STEPS = 2
CALLS = 3
OUTPUT_WORDS = 60


class _Thread:
    def __init__(self) -> None:
        self.log = LogBuilder("t_prop")
        self.log.create(workspace="/w", title="prop")
        self._projector = Projector()
        self._seen = 0

    def turns(self) -> list[TurnState]:
        self._projector.apply_all(self.log.events[self._seen :])
        self._seen = len(self.log.events)
        return list(self._projector.snapshot().visible_turns)


def _request(history: tuple[Item, ...]) -> ModelRequest:
    return ModelRequest(system_prompt="You are kun. " * 10, history=history)


def _check_paired(history: tuple[Item, ...]) -> None:
    calls = {i.call_id for i in history if isinstance(i, ToolCall)}
    results = {i.call_id for i in history if isinstance(i, ToolResult)}
    assert calls == results, calls ^ results
    for entry in repair_history(history):
        if isinstance(entry, ModelEntry):
            assert len(entry.calls) == len(entry.results)


def _step(thread: _Thread) -> tuple[Item, ...]:
    """What the loop sends for the next model step, compacting first when
    the estimate is over the threshold."""
    turns = thread.turns()
    sent = tuple(visible_history(turns))
    if should_compact(estimate_request_tokens(_request(sent)), WINDOW):
        plan = plan_compaction(turns)
        if plan is not None:
            summariser = summary_request(plan.items, budget_tokens=int(WINDOW * 0.8))
            assert estimate_request_tokens(summariser) <= WINDOW
            text = "The tasks so far are done; files read, answers given. " * 3
            b = thread.log
            b.item(compaction_item(b.next_id("cmp"), text, plan))
            sent = tuple(visible_history(thread.turns()))
    _check_paired(sent)
    assert estimate_request_tokens(_request(sent)) <= WINDOW
    return sent


Shape = tuple[int, list[list[int]], int, int, random.Random]

turn_shapes = st.lists(
    st.tuples(
        st.integers(1, 40),  # prompt words
        st.lists(  # steps: each a list of (output words) for its parallel calls
            st.lists(st.integers(0, OUTPUT_WORDS), min_size=1, max_size=CALLS),
            max_size=STEPS,
        ),
        st.integers(1, 40),  # answer words
        st.integers(0, 9),  # 0: rewind the last turn after this one
        st.randoms(use_true_random=False),
    ),
    min_size=1,
    max_size=60,
)


@given(turn_shapes)
def test_every_request_is_paired_and_within_the_window(shapes: list[Shape]) -> None:
    thread = _Thread()
    b = thread.log
    sent: tuple[Item, ...] = ()
    for n, (prompt, steps, answer, rewind, rng) in enumerate(shapes):
        turn_id = b.start_turn(f"task {n} " + "word " * prompt)
        for s, outputs in enumerate(steps):
            sent = _step(thread)
            calls = [
                b.tool_call("read_file", {"path": f"f{n}_{s}_{k}"}) for k in range(len(outputs))
            ]
            order = list(range(len(calls)))
            rng.shuffle(order)
            for k in order:
                b.start_tool(calls[k])
                b.finish_tool(calls[k], "line " * outputs[k])
        sent = _step(thread)
        b.assistant_text(["answer " * answer])
        b.complete()
        if rewind == 0:
            b.rewind(turn_id)
    lines = [msgspec.json.encode(e) for e in b.events]
    replayed = replay([msgspec.json.decode(line, type=ev.Event) for line in lines])
    history = tuple(visible_history(replayed.visible_turns))
    if sent and all(i.id in {h.id for h in history} for i in sent):
        assert history[: len(sent)] == sent
