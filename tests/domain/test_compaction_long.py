"""A long thread against a small context window, driven the way the loop
will drive the pure parts: before each turn's first step, estimate the
request; over ``compact_at`` of the window, plan a compaction, build the
summarising request, record the summary. The thread keeps working through
several compactions, every request stays under the window, and the log
replays to the same history that was sent."""

from __future__ import annotations

import msgspec

from kun.contracts import events as ev
from kun.contracts.items import Compaction, Item
from kun.contracts.model import ModelRequest
from kun.domain.compaction import (
    compaction_item,
    estimate_request_tokens,
    plan_compaction,
    should_compact,
    summary_request,
    visible_history,
)
from kun.domain.reduce import Projector, replay
from kun.domain.state import TurnState
from kun.testing.logbuilder import LogBuilder

WINDOW = 3000
TURNS = 300


def _request(history: tuple[Item, ...]) -> ModelRequest:
    return ModelRequest(system_prompt="You are kun. " * 20, history=history)


class _Thread:
    """A log being written and its projection kept up to date."""

    def __init__(self) -> None:
        self.log = LogBuilder("t_long")
        self.log.create(workspace="/w", title="long")
        self._projector = Projector()
        self._seen = 0

    def turns(self) -> list[TurnState]:
        self._projector.apply_all(self.log.events[self._seen :])
        self._seen = len(self.log.events)
        return list(self._projector.snapshot().turns)


def test_a_300_turn_thread_keeps_working_through_compactions() -> None:
    thread = _Thread()
    b = thread.log
    sent: tuple[Item, ...] = ()
    compactions = 0
    for n in range(TURNS):
        b.start_turn(f"Task {n}: " + "change the parser so it accepts more input. " * 4)
        turns = thread.turns()
        sent = tuple(visible_history(turns))
        if should_compact(estimate_request_tokens(_request(sent)), WINDOW):
            plan = plan_compaction(turns)
            assert plan is not None, f"turn {n}: nothing to compact"
            summariser = summary_request(plan.items, budget_tokens=WINDOW)
            assert summariser.tools == ()
            assert estimate_request_tokens(summariser) <= WINDOW
            text = f"Tasks up to {n - 1} are done; the parser accepts more input. " * 3
            b.item(compaction_item(b.next_id("cmp"), text, plan))
            compactions += 1
            sent = tuple(visible_history(thread.turns()))
        assert estimate_request_tokens(_request(sent)) <= WINDOW, f"turn {n}"
        b.run_tool("read_file", {"path": f"src/p{n}.py"}, "def parse(text): ...\n" * 20)
        b.assistant_text([f"Done with task {n}. " * 5])
        b.complete()
    assert compactions >= 5, compactions
    lines = [msgspec.json.encode(e) for e in b.events]
    decoder = msgspec.json.Decoder(ev.Event)
    replayed = replay([decoder.decode(line) for line in lines])
    history = tuple(visible_history(replayed.turns))
    assert isinstance(history[0], Compaction)
    assert history[: len(sent)] == sent, "the log replays to the history that was sent"
