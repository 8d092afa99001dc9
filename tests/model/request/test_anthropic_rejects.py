"""Anthropic Messages bodies the provider used to reject (issue 19, items
18-20), each class found by the random histories of
``tests/properties/test_request_invariants.py`` and named in
:mod:`.rules`: a body with no message, thinking turned off although the
step opening the final turn is signed, and a prefill sent with thinking on.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from kun.contracts.capabilities import ModelCapabilities
from kun.contracts.items import Item
from kun.contracts.model import ModelRequest
from kun.model.request.anthropic import CONTINUE_TURN, EMPTY_CONVERSATION
from kun.model.request_codec import codec_for

from .histories import (
    CLAUDE_THINKING,
    DEEPSEEK_THINKING,
    TEXT_ONLY,
    TOOLS,
    call,
    result,
    say,
    think,
    user,
)
from .rules import THINKING, anthropic_thinking_dropped, violations

DEEPSEEK_ANTHROPIC = "https://api.deepseek.com/anthropic"


def encode(
    history: tuple[Item, ...],
    *,
    capabilities: ModelCapabilities = CLAUDE_THINKING,
    effort: str | None = "high",
    url: str | None = None,
    context: str | None = None,
) -> dict[str, Any]:
    codec = codec_for("messages", capabilities=capabilities, endpoint_url=url)
    request = ModelRequest(
        system_prompt="sys", history=history, tools=TOOLS, context_instructions=context
    )
    body = codec.encode(
        request, model="claude-test", stream=True, max_tokens=None, reasoning_effort=effort
    )
    decoded: dict[str, Any] = msgspec.json.decode(msgspec.json.encode(body))
    return decoded


def shape(body: dict[str, Any]) -> list[tuple[str, list[str]]]:
    return [(t["role"], [b["type"] for b in t["content"]]) for t in body["messages"]]


# -- item 18: the only user message is blank -----------------------------------


@pytest.mark.parametrize(
    "history",
    [(user(1, "   "),), (user(1, " "), say(1, "\n")), ()],
    ids=["blank_prompt", "blank_prompt_and_answer", "empty"],
)
@pytest.mark.parametrize("capabilities", [TEXT_ONLY, CLAUDE_THINKING])
def test_a_history_with_nothing_to_send_still_sends_one_user_turn(
    history: tuple[Item, ...], capabilities: ModelCapabilities
) -> None:
    body = encode(history, capabilities=capabilities)
    assert violations("messages", body) == []
    (turn,) = body["messages"]
    assert turn["role"] == "user"
    assert [b["text"] for b in turn["content"]] == [EMPTY_CONVERSATION]


def test_context_instructions_alone_need_no_placeholder() -> None:
    body = encode((user(1, "  "),), context="Todo: none.")
    texts = [b["text"] for t in body["messages"] for b in t["content"]]
    assert texts == ["Todo: none."]


# -- item 19: the step that opens the final turn is signed ----------------------

AFTER_DROPPED_CALLS = (
    user(1, "Fix it."),
    say(1, "Reading."),
    call("toolu_1", path="a.py"),
    call("toolu_x", path="x.py"),
    result("toolu_1", "A"),
    think(2, "", "sig-2"),
    call("toolu_2", path="b.py"),
    result("toolu_2", "B"),
)
"""A step whose block was dropped (one call never answered) keeps its text;
the signed step after it used to be merged onto that text, so the final
assistant turn started with text and thinking was turned off."""

AFTER_A_BLANK_PROMPT = (
    *AFTER_DROPPED_CALLS[:5],
    user(2, "  "),
    *AFTER_DROPPED_CALLS[5:],
)
"""The same, with a blank prompt (an old log) opening the signed step."""


@pytest.mark.parametrize(
    "history", [AFTER_A_BLANK_PROMPT, AFTER_DROPPED_CALLS], ids=["blank_prompt", "dropped_calls"]
)
def test_a_signed_step_after_an_assistant_message_keeps_thinking_on(
    history: tuple[Item, ...],
) -> None:
    body = encode(history)
    assert body["thinking"]["type"] == "enabled"
    assert violations("messages", body) == []
    assert anthropic_thinking_dropped(history, body) == []
    assert shape(body)[-4:] == [
        ("assistant", ["text"]),
        ("user", ["text"]),
        ("assistant", ["thinking", "tool_use"]),
        ("user", ["tool_result"]),
    ]
    assert body["messages"][-3]["content"][0]["text"] == CONTINUE_TURN
    assert body["messages"][-2]["content"][0]["signature"] == "sig-2"


def test_the_separating_turn_is_the_same_in_every_step_of_the_thread() -> None:
    """Earlier turns keep their bytes as the thread grows (the cache prefix)."""
    shorter = encode(AFTER_DROPPED_CALLS)
    longer = encode((*AFTER_DROPPED_CALLS, say(3, "Both fixed."), user(3, "Thanks.")))
    kept = len(shorter["messages"]) - 1
    strip = [{**b, "cache_control": None} for t in shorter["messages"][:kept] for b in t["content"]]
    again = [{**b, "cache_control": None} for t in longer["messages"][:kept] for b in t["content"]]
    assert again == strip


def test_without_thinking_the_turns_still_merge() -> None:
    """No thinking block to start a turn with: nothing to separate."""
    body = encode(AFTER_DROPPED_CALLS, effort="off")
    assert "thinking" not in body
    assert shape(body)[-2:] == [("assistant", ["text", "tool_use"]), ("user", ["tool_result"])]


# -- item 20: a prefill with thinking on ----------------------------------------

ENDS_ON_THE_ANSWER = (
    user(1, "Fix it."),
    think(1, "Easy.", "sig-1"),
    say(1, "Done."),
)


def test_a_prefill_is_sent_with_thinking_off() -> None:
    body = encode(ENDS_ON_THE_ANSWER)
    assert "thinking" not in body
    assert violations("messages", body) == []
    assert shape(body) == [("user", ["text"]), ("assistant", ["text"])]


def test_deepseek_is_told_thinking_is_off_for_a_prefill() -> None:
    body = encode(ENDS_ON_THE_ANSWER, capabilities=DEEPSEEK_THINKING, url=DEEPSEEK_ANTHROPIC)
    assert body["thinking"] == {"type": "disabled"}
    assert violations("messages", body) == []
    assert not any(b["type"] in THINKING for t in body["messages"] for b in t["content"])


def test_a_new_user_turn_keeps_thinking_on() -> None:
    body = encode(ENDS_ON_THE_ANSWER, context="Todo: none.")
    assert body["thinking"]["type"] == "enabled"
    assert violations("messages", body) == []
