"""The live view draws the recorder's previews and then the durable deltas
that carry the same text: each character once, none lost."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from types import SimpleNamespace
from typing import Any

import pytest

from kun.cli.terminal import LiveView, PlainSink
from kun.contracts import events as ev
from kun.contracts.events import digest_text
from kun.contracts.items import AssistantText

pytestmark = pytest.mark.anyio

TID, TURN = "thr_v", "turn_1"


def delta(seq: int, text: str) -> ev.AssistantTextDelta:
    return ev.AssistantTextDelta(
        seq=seq, at=0, thread_id=TID, turn_id=TURN, item_id="txt_1", text=text
    )


class _Kun:
    """The part of :class:`~kun.app.interface.Kun` a view reads: a feed of
    ``events`` (previews only when asked) and a settled turn."""

    def __init__(self, events: list[ev.Event]) -> None:
        self.events = events
        self.live: bool | None = None

    @asynccontextmanager
    async def follow(
        self, thread_id: str, *, after: int = 0, previews: bool = False
    ) -> AsyncIterator[AsyncIterator[ev.Event]]:
        self.live = previews

        async def feed() -> AsyncIterator[ev.Event]:
            for event in self.events:
                if previews or event.seq:
                    yield event

        yield feed()

    async def turn(self, thread_id: str, turn_id: str) -> Any:
        return SimpleNamespace(status="completed", duration_ms=0, usage=SimpleNamespace(calls=0))


def _view(events: list[ev.Event]) -> tuple[LiveView, io.StringIO, _Kun]:
    kun = _Kun(events)
    out = io.StringIO()
    return LiveView(kun, TID, PlainSink(out)), out, kun  # type: ignore[arg-type]


async def test_a_preview_then_its_durable_delta_draws_the_text_once() -> None:
    done = ev.ItemCompleted(
        seq=7,
        at=0,
        thread_id=TID,
        turn_id=TURN,
        item=AssistantText(id="txt_1", text=""),
        text_from_deltas=digest_text("Hello, world."),
    )
    events: list[ev.Event] = [
        delta(4, "He"),
        delta(0, "llo"),
        delta(0, ", wo"),
        delta(5, "llo, wo"),
        delta(0, "rld"),
        delta(6, "rld."),
        done,
        ev.TurnCompleted(seq=8, at=0, thread_id=TID, turn_id=TURN),
    ]
    view, out, recorder = _view(events)
    texts: list[str] = []
    view.sink.text_done = lambda item_id, text: texts.append(text)  # type: ignore[method-assign]
    await view.follow(3, TURN)
    assert recorder.live is True
    assert out.getvalue().split("\n")[0] == "Hello, world."
    assert texts == ["Hello, world."], "the completed text is the streamed one"
