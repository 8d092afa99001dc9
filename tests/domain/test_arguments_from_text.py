"""``item_completed`` with ``arguments_from_text``: a streamed tool call's
raw arguments are rebuilt from the text its deltas built, so a file a model
writes is not logged twice; anything else the flag is put on is refused."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kun.contracts import events as ev
from kun.contracts.events import digest_text
from kun.contracts.items import AssistantText, ToolCall
from kun.domain.errors import ProjectionError
from kun.domain.reduce import replay
from kun.testing.logbuilder import LogBuilder

_replace = msgspec.structs.replace


def _call_log(arguments: str, pieces: int = 4) -> list[ev.Event]:
    b = LogBuilder("t1")
    b.create(workspace="/w")
    b.start_turn("write it")
    for i in range(0, len(arguments), pieces):
        b.emit(
            ev.ToolCallDelta,
            turn_id=b.turn_id,
            item_id="call_1",
            call_id="c1",
            name="write_file" if i == 0 else "",
            arguments=arguments[i : i + pieces],
        )
    call = ToolCall(
        id="call_1",
        call_id="c1",
        name="write_file",
        arguments=msgspec.Raw(arguments.encode()),
        arguments_text=arguments,
    )
    b.emit(ev.ItemCompleted, turn_id=b.turn_id, item=call)
    b.complete()
    return b.events


def _compact(completed: ev.ItemCompleted) -> ev.ItemCompleted:
    item = completed.item
    assert isinstance(item, ToolCall)
    return _replace(
        completed,
        item=_replace(item, arguments_text="", arguments=msgspec.Raw(b"{}")),
        text_from_deltas=digest_text(item.arguments_text),
        arguments_from_text=True,
    )


@given(st.text(max_size=300), st.integers(1, 9))
@settings(max_examples=100, deadline=None)
def test_arguments_rebuilt_from_the_deltas_replay_to_the_same_projection(
    content: str, pieces: int
) -> None:
    arguments = msgspec.json.encode({"path": "notes.md", "content": content}).decode()
    events = _call_log(arguments, pieces)
    *head, completed, done = events
    assert isinstance(completed, ev.ItemCompleted)
    compact = _compact(completed)
    line = msgspec.json.encode(compact)
    again = msgspec.json.decode(line, type=ev.Event)
    state = replay([*head, again, done])
    assert state == replay(events)
    call = state.turns[0].items[-1]
    assert bytes(call.arguments) == arguments.encode()  # type: ignore[union-attr]


def test_the_flag_is_refused_without_a_digest_beside_arguments_or_on_another_item() -> None:
    *head, completed, done = _call_log('{"path": "a.py"}')
    assert isinstance(completed, ev.ItemCompleted)
    compact = _compact(completed)
    with pytest.raises(ProjectionError, match="without text_from_deltas"):
        replay([*head, _replace(compact, text_from_deltas=None), done])
    kept = _replace(compact, item=completed.item)
    with pytest.raises(ProjectionError, match="carries its arguments"):
        replay([*head, _replace(kept, item=_replace(completed.item, arguments_text="")), done])
    b = LogBuilder("t1")
    b.create(workspace="/w")
    b.start_turn("hi")
    b.emit(ev.AssistantTextDelta, turn_id=b.turn_id, item_id="txt_1", text="Hi")
    b.emit(
        ev.ItemCompleted,
        turn_id=b.turn_id,
        item=AssistantText(id="txt_1", text=""),
        text_from_deltas=digest_text("Hi"),
        arguments_from_text=True,
    )
    with pytest.raises(ProjectionError, match="assistant_text"):
        replay(b.events)
