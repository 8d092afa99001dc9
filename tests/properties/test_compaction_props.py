"""Invariants of the compaction window (kun.domain.compaction) over random
histories, broken ones included (tests.properties.test_request_invariants):

* a compaction naming any item as its cut never parts a call from its
  result: every pair the history repair makes over the log without
  compactions is wholly kept or wholly summarised, and the window pairs
  nothing the log did not pair;
* with no compaction naming a cut the history is the same object, so the
  request is byte for byte today's;
* a compaction in turns a rewind hid is ignored: the window over the
  visible turns is the window over a log that never had the hidden turns;
* of several compactions that apply, the latest wins.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from kun.contracts.items import AssistantText, Compaction, Item, ToolCall, ToolResult, UserMessage
from kun.domain.compaction import history_window, visible_history
from kun.domain.history import ModelEntry, repair_history
from kun.domain.state import TurnState
from tests.model.request.rules import violations
from tests.properties.test_request_invariants import SETTINGS, encode, histories


def _pairs(items: Sequence[Item]) -> set[tuple[str, str]]:
    pairs: set[tuple[str, str]] = set()
    for entry in repair_history(items):
        if isinstance(entry, ModelEntry):
            pairs |= {(c.id, r.id) for c, r in zip(entry.calls, entry.results, strict=True)}
    return pairs


def _windowed(item: Item) -> bool:
    return isinstance(item, Compaction) and item.covers_until is not None


@st.composite
def compacted(draw: st.DrawFn) -> tuple[list[Item], Compaction]:
    """A random history with a compaction inserted anywhere, naming any item
    before it (or an unknown one)."""
    items = list(draw(histories()))
    at = draw(st.integers(0, len(items)))
    before = [item.id for item in items[:at]] + ["unknown"]
    covers = draw(st.sampled_from(before))
    status = draw(st.sampled_from(["completed", "completed", "in_progress"]))
    compaction = Compaction(id="cmp", summary="gist", covers_until=covers, status=status)
    items.insert(at, compaction)
    return items, compaction


@given(compacted())
def test_the_window_never_parts_a_call_from_its_result(case: tuple[list[Item], Compaction]) -> None:
    items, _ = case
    window = history_window(items)
    kept = {item.id for item in window}
    reference = _pairs([item for item in items if not _windowed(item)])
    for call_id, result_id in reference:
        assert (call_id in kept) == (result_id in kept), (call_id, result_id)
    assert _pairs(window) <= reference


@given(histories())
def test_without_a_compaction_the_history_is_unchanged(history: tuple[Item, ...]) -> None:
    items = [item for item in history if not _windowed(item)]
    assert history_window(items) is items
    turns = [TurnState(turn_id="t", status="completed", started_seq=1, started_at=0, items=history)]
    assert tuple(visible_history(turns)) == history


def _turn(n: int, draw: st.DrawFn) -> TurnState:
    """A settled turn: a question, steps whose calls all have results, an
    answer."""
    items: list[Item] = [UserMessage(id=f"u{n}", text=f"q{n}")]
    for step in range(draw(st.integers(0, 2))):
        ids = [f"c{n}_{step}_{k}" for k in range(draw(st.integers(1, 3)))]
        items += [ToolCall(id=f"i{c}", call_id=c, arguments=msgspec.Raw(b"{}")) for c in ids]
        items += [ToolResult(id=f"r{c}", call_id=c) for c in draw(st.permutations(ids))]
    items.append(AssistantText(id=f"a{n}", text=f"a{n}"))
    return TurnState(
        turn_id=f"t{n}", status="completed", started_seq=n, started_at=n, items=tuple(items)
    )


@st.composite
def threads(draw: st.DrawFn) -> list[TurnState]:
    """Settled turns, some of which start with a compaction covering up to
    the end of an earlier turn."""
    turns: list[TurnState] = []
    for n in range(draw(st.integers(1, 8))):
        turn = _turn(n, draw)
        if turns and draw(st.booleans()):
            covers = draw(st.sampled_from(turns)).items[-1].id
            cmp = Compaction(id=f"cmp{n}", summary=f"s{n}", covers_until=covers)
            turn = msgspec.structs.replace(turn, items=(turn.items[0], cmp, *turn.items[1:]))
        turns.append(turn)
    return turns


@given(threads())
def test_the_latest_compaction_wins(turns: list[TurnState]) -> None:
    window = visible_history(turns)
    compactions = [i for t in turns for i in t.items if isinstance(i, Compaction)]
    if not compactions:
        assert list(window) == [i for t in turns for i in t.items]
        return
    latest = compactions[-1]
    assert window[0] == latest
    assert sum(isinstance(item, Compaction) for item in window) == 1
    cut = next(t for t in turns if t.items[-1].id == latest.covers_until)
    after = turns[turns.index(cut) + 1 :]
    assert [i.id for i in window[1:]] == [
        i.id for t in after for i in t.items if not isinstance(i, Compaction)
    ]


@given(threads(), st.data())
def test_a_compaction_in_hidden_turns_is_ignored(
    turns: list[TurnState], data: st.DataObject
) -> None:
    rewind = data.draw(st.integers(0, len(turns)))
    hidden = [msgspec.structs.replace(t, hidden_by=99) for t in turns[rewind:]]
    state_turns = [*turns[:rewind], *hidden]
    assert list(visible_history(state_turns)) == list(visible_history(turns[:rewind]))
    shown = {i.id for i in visible_history(state_turns)}
    assert not shown & {i.id for t in hidden for i in t.items}


@given(compacted())
def test_every_windowed_body_keeps_the_providers_rules(case: tuple[list[Item], Compaction]) -> None:
    items, _ = case
    history = tuple(history_window(items))
    for fmt, capabilities, url, effort in SETTINGS:
        assert violations(fmt, encode(fmt, capabilities, url, effort, history)) == [], fmt
