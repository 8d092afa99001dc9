"""``item_completed`` with ``text_from_deltas``: the text comes from the
deltas, checked against the digest, and a mismatch names the item."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kun.contracts import events as ev
from kun.contracts.events import digest_text, streamed_field
from kun.contracts.items import ToolCall, ToolResult
from kun.domain.errors import ProjectionError
from kun.domain.reduce import Projector, replay
from kun.testing.logbuilder import LogBuilder

_replace = msgspec.structs.replace


def _compact(events: list[ev.Event]) -> list[ev.Event]:
    """Every completed item that deltas stream into recorded with a digest."""
    out: list[ev.Event] = []
    for e in events:
        if isinstance(e, ev.ItemCompleted) and (field := streamed_field(e.item)):
            digest = digest_text(getattr(e.item, field))
            e = _replace(e, item=_replace(e.item, **{field: ""}), text_from_deltas=digest)
        out.append(e)
    return out


def _log(text: list[str], thought: list[str], path: str = "a.py") -> list[ev.Event]:
    b = LogBuilder("t1")
    b.create(workspace="/w")
    b.start_turn("hi")
    raw = msgspec.json.encode({"path": path}).decode()
    for i in range(0, len(raw), 4):
        b.emit(
            ev.ToolCallDelta,
            turn_id=b.turn_id,
            item_id="call_1",
            call_id="c1",
            name="read_file" if i == 0 else "",
            arguments=raw[i : i + 4],
        )
    call = ToolCall(
        id="call_1",
        call_id="c1",
        name="read_file",
        arguments=msgspec.Raw(raw.encode()),
        arguments_text=raw,
    )
    b.emit(ev.ItemCompleted, turn_id=b.turn_id, item=call)
    b.reasoning(thought)
    b.assistant_text(text)
    b.complete()
    return b.events


@given(
    st.lists(st.text(max_size=6), min_size=1, max_size=8),
    st.lists(st.text(max_size=6), min_size=1, max_size=4),
    st.text(min_size=1, max_size=12),
)
@settings(max_examples=100, deadline=None)
def test_a_digest_replays_to_the_same_projection_as_the_text(
    text: list[str], thought: list[str], path: str
) -> None:
    events = _log(text, thought, path)
    compact = _compact(events)
    assert (
        sum(e.text_from_deltas is not None for e in compact if isinstance(e, ev.ItemCompleted)) == 3
    )
    assert replay(compact) == replay(events)


def test_the_fold_says_what_it_would_fill_in() -> None:
    events = _log(["Hel", "lo"], ["hm"])
    projector = Projector()
    projector.apply_all(events[:-2])
    (turn,) = projector.snapshot().turns
    text_id = turn.items[-1].id
    assert projector.streamed_text(turn.turn_id, text_id) == "Hello"
    assert projector.streamed_text(turn.turn_id, "nope") is None
    assert projector.streamed_text(None, text_id) is None


@pytest.mark.parametrize("wrong", ["Hellp", "Hello!", ""])
def test_a_digest_that_does_not_match_names_the_item(wrong: str) -> None:
    events = _log(["Hel", "lo"], ["hm"])
    *head, completed, done = _compact(events)
    assert isinstance(completed, ev.ItemCompleted)
    bad = _replace(completed, text_from_deltas=digest_text(wrong))
    with pytest.raises(ProjectionError, match=f"item {completed.item.id!r}"):
        replay([*head, bad, done])


def test_a_digest_beside_a_text_or_on_another_item_type_is_refused() -> None:
    events = _log(["Hel", "lo"], ["hm"])
    *head, completed, done = events
    assert isinstance(completed, ev.ItemCompleted)
    with_text = _replace(completed, text_from_deltas=digest_text("Hello"))
    with pytest.raises(ProjectionError, match="carries text"):
        replay([*head, with_text, done])
    result = ToolResult(id=completed.item.id, call_id="c", output="")
    other = _replace(completed, item=result, text_from_deltas=digest_text(""))
    with pytest.raises(ProjectionError, match="tool_result"):
        replay([*head, other, done])
