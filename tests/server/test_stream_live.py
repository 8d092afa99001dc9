"""``?live=1``: previews of streamed text between the durable events."""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from kun.contracts import events as ev
from tests.server.test_stream import Served, data_of, follow, served, text_turn

__all__ = ["served"]

WORDS = [f"w{i} " for i in range(40)]


def test_previews_come_between_durable_events_and_add_up_to_the_text(
    served: Callable[..., Served],
) -> None:
    s = served([text_turn(*WORDS)], delay=0.01)
    s.start_turn("go")
    got = follow(
        s.events_url() + "?live=1", stop=lambda m: m.fields.get("event") == "turn_completed"
    )
    previews = [m for m in got if m.fields.get("event") == "preview"]
    assert previews
    assert all("id" not in m.fields for m in previews)
    durable = [m for m in got if "id" in m.fields]
    assert data_of(durable) == s.log()[: len(durable)]

    shown, pending = "", 0  # the documented rule, for the one text stream
    for m in got:
        kind = m.fields.get("event")
        if kind not in ("preview", "assistant_text_delta"):
            continue
        delta = msgspec.json.decode(m.fields["data"], type=ev.AssistantTextDelta)
        if kind == "preview":
            assert delta.seq == 0
            shown += delta.text
            pending += len(delta.text)
        else:
            skip = min(len(delta.text), pending)
            shown += delta.text[skip:]
            pending -= skip
    assert shown == "".join(WORDS)


def test_without_live_there_are_no_previews(served: Callable[..., Served]) -> None:
    s = served([text_turn(*WORDS)], delay=0.01)
    s.start_turn("go")
    got = follow(s.events_url(), stop=lambda m: m.fields.get("event") == "turn_completed")
    assert all("id" in m.fields for m in got[1:])
    assert data_of(got) == s.log()[: len(got) - 1]
