"""Compaction in the loop with a scripted model: the threshold before a step,
the overflow backstop, and what the log and the next request show."""

from __future__ import annotations

from pathlib import Path

import pytest

from kun.contracts import events as ev
from kun.contracts.items import Compaction, UserMessage, WarningItem
from kun.contracts.model import (
    CompletedChunk,
    ErrorChunk,
    ModelRequest,
    ModelStreamChunk,
    TextDeltaChunk,
    UsageChunk,
)
from kun.contracts.usage import UsageSnapshot
from kun.domain.compaction import COMPACTION_PROMPT, SUMMARY_PREFIX, estimate_request_tokens
from kun.domain.reduce import replay
from kun.domain.transcript import render_transcript
from kun.model.scripted import text_reply
from kun.runtime.compact import OVERFLOW_AFTER_COMPACTION, SUMMARY_MAX_TOKENS, SUMMARY_TRIMMED
from kun.store.jsonl import JsonlEventStore
from tests.runtime.support import Harness, harness

pytestmark = pytest.mark.anyio

LONG = "The answer goes on. " * 200
"""About 1000 tokens of reply: turn 1's weight in the history."""


def _summary(text: str = "Goal: greet. Done: said hello.") -> list[ModelStreamChunk]:
    return [
        TextDeltaChunk(text=text),
        UsageChunk(usage=UsageSnapshot(prompt_tokens=900, completion_tokens=20)),
        CompletedChunk(stop_reason="stop"),
    ]


def _overflow() -> list[ModelStreamChunk]:
    return [ErrorChunk(code="context_overflow", message="prompt is too long")]


def _is_summariser(request: ModelRequest) -> bool:
    last = request.history[-1]
    return not request.tools and isinstance(last, UserMessage) and last.text == COMPACTION_PROMPT


def _events(h: Harness) -> list[ev.Event]:
    return list(JsonlEventStore(h.home).read(h.thread_id))


async def test_a_prompt_over_the_threshold_is_compacted_before_the_step(tmp_path: Path) -> None:
    script = [text_reply(LONG), _summary(), text_reply("second answer")]
    async with harness(tmp_path, script) as h:
        await h.run("hello")
        base = estimate_request_tokens(h.model.requests[0])
        window = int((base + 500) / 0.8)
        h.service.context_windows = lambda provider, model: window
        turn = await h.run("and now?")
        assert turn.status == "completed"
        first, summariser, step = h.model.requests
    assert _is_summariser(summariser) and summariser.max_tokens == SUMMARY_MAX_TOKENS
    assert summariser.history[0] == h.state().turns[0].items[0]
    (compaction,) = [i for i in turn.items if isinstance(i, Compaction)]
    assert compaction.summary == SUMMARY_PREFIX + "Goal: greet. Done: said hello."
    assert compaction.covers_until == h.state().turns[0].items[-1].id
    assert step.history[0] == compaction
    assert [type(i) for i in step.history[1:]] == [UserMessage]
    assert step.history[1].text == "and now?"  # type: ignore[union-attr]
    assert step.system_prompt == first.system_prompt and step.tools == first.tools
    usage = [e for e in _events(h) if isinstance(e, ev.Usage) and e.turn_id == turn.turn_id]
    assert [u.usage.prompt_tokens for u in usage] == [900]


async def test_under_the_threshold_or_without_a_window_nothing_is_compacted(
    tmp_path: Path,
) -> None:
    script = [text_reply(LONG), text_reply("two"), text_reply("three")]
    async with harness(tmp_path, script) as h:
        await h.run("hello")
        await h.run("again")
        second = h.model.requests[1]
        window = int(estimate_request_tokens(second) / 0.8) + 200
        h.service.context_windows = lambda provider, model: window
        turn = await h.run("once more")
        assert turn.status == "completed"
        assert not any(_is_summariser(r) for r in h.model.requests)
        assert not any(isinstance(i, Compaction) for t in h.state().turns for i in t.items)
        third = h.model.requests[2]
        assert third.history[: len(second.history)] == second.history


async def test_an_overflow_is_compacted_once_and_the_step_sent_again(tmp_path: Path) -> None:
    script = [text_reply(LONG), _overflow(), _summary(), text_reply("fits now")]
    async with harness(tmp_path, script) as h:
        await h.run("hello")
        turn = await h.run("and now?")
        assert turn.status == "completed" and turn.error is None
        _, overflowed, summariser, resent = h.model.requests
        assert len(overflowed.history) == 3
        assert _is_summariser(summariser)
        assert isinstance(resent.history[0], Compaction)
        assert [i.id for i in resent.history[1:]] == [turn.items[0].id]
        events = _events(h)
        state = replay(events)
    assert state.turns == h.state().turns
    text = "\n".join(render_transcript(state))
    assert "compacted 2 items: " in text and "fits now" in text


async def test_a_second_overflow_fails_the_turn_with_its_code(tmp_path: Path) -> None:
    script = [text_reply(LONG), _overflow(), _summary(), _overflow()]
    async with harness(tmp_path, script) as h:
        await h.run("hello")
        turn = await h.run("and now?")
        assert len(h.model.requests) == 4
    assert turn.status == "failed" and turn.error is not None
    assert turn.error.code == OVERFLOW_AFTER_COMPACTION
    assert "after the history was compacted" in turn.error.message


async def test_an_overflow_with_nothing_to_summarise_fails_at_once(tmp_path: Path) -> None:
    async with harness(tmp_path, [_overflow()]) as h:
        turn = await h.run("a first prompt too large for any window")
        assert len(h.model.requests) == 1
    assert turn.status == "failed" and turn.error is not None
    assert turn.error.code == OVERFLOW_AFTER_COMPACTION
    assert "no earlier history left to summarise" in turn.error.message


async def test_a_failed_summary_leaves_a_warning_and_fails_the_overflowed_turn(
    tmp_path: Path,
) -> None:
    script = [text_reply(LONG), _overflow(), _summary(text="  ")]
    async with harness(tmp_path, script) as h:
        await h.run("hello")
        turn = await h.run("and now?")
    assert turn.status == "failed" and turn.error is not None
    assert turn.error.code == OVERFLOW_AFTER_COMPACTION
    assert [getattr(i, "code", None) for i in turn.items].count("compaction_failed") == 1
    assert not any(isinstance(i, Compaction) for i in turn.items)


async def test_a_summariser_that_overflows_too_is_sent_again_with_the_oldest_half_left_out(
    tmp_path: Path,
) -> None:
    """Without a known window the summariser gets the history that just
    overflowed; it is sent once more with the older half of it left out."""
    script = [
        text_reply(LONG * 2),
        text_reply(LONG),
        _overflow(),
        _overflow(),
        _summary(),
        text_reply("fits now"),
    ]
    async with harness(tmp_path, script) as h:
        await h.run("hello")
        await h.run("again")
        turn = await h.run("and now?")
        assert turn.status == "completed", turn.error
        first, second = h.model.requests[3:5]
    assert _is_summariser(first) and _is_summariser(second)
    assert [i.id for i in second.history[:-1]] == [i.id for i in h.state().turns[1].items]
    assert second.history[-1] == first.history[-1]
    (warning,) = [i for i in turn.items if isinstance(i, WarningItem)]
    assert warning.code == SUMMARY_TRIMMED and "without the 2 oldest items" in warning.message
    (compaction,) = [i for i in turn.items if isinstance(i, Compaction)]
    assert compaction.covers_until == h.state().turns[1].items[-1].id


async def test_a_summariser_that_overflows_twice_fails_the_turn(tmp_path: Path) -> None:
    script = [text_reply(LONG * 2), text_reply(LONG), *[_overflow()] * 3]
    async with harness(tmp_path, script) as h:
        await h.run("hello")
        await h.run("again")
        turn = await h.run("and now?")
        assert len(h.model.requests) == 5
    assert turn.status == "failed" and turn.error is not None
    assert turn.error.code == OVERFLOW_AFTER_COMPACTION
