"""Bodies a provider accepts when the history came from somewhere else
(issue 8, items 15-18): another model's steps, thinking switched on
mid-thread, reasoning recorded after the calls it came before, a blank user
message in an old log, an attachment that is too large for the model now
in use.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from kun.contracts.capabilities import ModelCapabilities
from kun.contracts.items import AssistantReasoning, AssistantText, Attachment, Item, ToolCall
from kun.contracts.model import ModelRequest, WireFormat
from kun.model.errors import AttachmentTooLarge
from kun.model.request.gemini import SKIP_SIGNATURE
from kun.model.request_codec import codec_for

from .gemini_sdk_check import sdk_violations
from .histories import (
    CLAUDE_THINKING,
    DEEPSEEK_THINKING,
    FORMATS,
    GEMINI_THINKING,
    MODEL,
    SCREENSHOT,
    TEXT_ONLY,
    TOOLS,
    call,
    load,
    result,
    say,
    think,
    user,
)
from .rules import foreign_signatures, violations

DEEPSEEK_ANTHROPIC = "https://api.deepseek.com/anthropic"


def encode(
    fmt: WireFormat,
    history: tuple[Item, ...],
    *,
    capabilities: ModelCapabilities = TEXT_ONLY,
    url: str | None = None,
    effort: str | None = None,
    loader: Any = load,
    **fields: Any,
) -> dict[str, Any]:
    codec = codec_for(fmt, capabilities=capabilities, endpoint_url=url, load_attachment=loader)
    request = ModelRequest(system_prompt="sys", history=history, tools=TOOLS, **fields)
    body = codec.encode(
        request, model=MODEL[fmt], stream=True, max_tokens=None, reasoning_effort=effort
    )
    decoded: dict[str, Any] = msgspec.json.decode(msgspec.json.encode(body))
    return decoded


def assistant_turns(body: dict[str, Any]) -> list[list[dict[str, Any]]]:
    return [turn["content"] for turn in body["messages"] if turn["role"] == "assistant"]


# -- item 15: DeepSeek's Anthropic endpoint in thinking mode ---------------------

OTHER_MODEL_STEPS = (
    user(1, "Read a.py."),
    say(1, "Reading."),
    call("call_1", path="a.py"),
    result("call_1", "A"),
    say(2, "It prints A."),
    user(2, "Now b.py."),
    think(3, "b.py next."),
    call("call_2", path="b.py"),
    result("call_2", "B"),
    call("call_3", path="c.py"),
    result("call_3", "C"),
)
"""Steps 1-2 by a model without reasoning (or before thinking was on); step
3 by DeepSeek with its (unsigned) reasoning; step 4 without any."""


def test_deepseek_anthropic_thinking_every_tool_turn_carries_a_thinking_block() -> None:
    body = encode(
        "messages",
        OTHER_MODEL_STEPS,
        capabilities=DEEPSEEK_THINKING,
        url=DEEPSEEK_ANTHROPIC,
        effort="high",
    )
    assert body["thinking"] == {"type": "enabled"}
    assert violations("messages", body) == []
    tool_turns = [t for t in assistant_turns(body) if any(b["type"] == "tool_use" for b in t)]
    assert len(tool_turns) == 3
    assert [t[0]["type"] for t in tool_turns] == ["thinking"] * 3
    assert tool_turns[1][0]["thinking"] == "b.py next.", "real reasoning is kept"


def test_deepseek_anthropic_placeholder_only_where_a_tool_is_used() -> None:
    body = encode(
        "messages",
        OTHER_MODEL_STEPS,
        capabilities=DEEPSEEK_THINKING,
        url=DEEPSEEK_ANTHROPIC,
        effort="high",
    )
    answers = [t for t in assistant_turns(body) if not any(b["type"] == "tool_use" for b in t)]
    assert answers and all(b["type"] == "text" for t in answers for b in t)


def test_deepseek_anthropic_thinking_off_sends_no_thinking_block() -> None:
    body = encode(
        "messages",
        OTHER_MODEL_STEPS,
        capabilities=DEEPSEEK_THINKING,
        url=DEEPSEEK_ANTHROPIC,
        effort="off",
    )
    assert body["thinking"] == {"type": "disabled"}
    assert all(b["type"] != "thinking" for t in assistant_turns(body) for b in t)
    assert violations("messages", body) == []


def test_deepseek_chat_completions_keeps_its_placeholder() -> None:
    """The chat codec's rule for the same model, for comparison."""
    body = encode(
        "chat_completions",
        OTHER_MODEL_STEPS,
        capabilities=DEEPSEEK_THINKING,
        url="https://api.deepseek.com",
        effort="high",
    )
    assistants = [m for m in body["messages"] if m["role"] == "assistant"]
    assert all(m["reasoning_content"] for m in assistants)


# -- item 16: reasoning recorded after the calls of its step ---------------------

SIGNATURE_ONLY = AssistantReasoning(id="r1", text="", signature="sig-only")


@pytest.mark.parametrize(
    "history",
    [
        (user(1, "Fix it."), call("toolu_1"), SIGNATURE_ONLY, result("toolu_1", "A")),
        (
            user(1, "Fix it."),
            say(1, "Reading."),
            call("toolu_1"),
            SIGNATURE_ONLY,
            result("toolu_1", "A"),
        ),
        (
            user(1, "Fix it."),
            call("toolu_1"),
            call("toolu_2"),
            SIGNATURE_ONLY,
            result("toolu_2", "B"),
            result("toolu_1", "A"),
        ),
    ],
    ids=["after_the_call", "after_text_and_call", "after_parallel_calls"],
)
def test_a_signature_only_thinking_block_keeps_thinking_on(history: tuple[Item, ...]) -> None:
    body = encode("messages", history, capabilities=CLAUDE_THINKING, effort="high")
    assert body["thinking"]["type"] == "enabled"
    assert violations("messages", body) == []
    (first,) = assistant_turns(body)
    assert first[0] == {"type": "thinking", "thinking": "", "signature": "sig-only"}


@pytest.mark.parametrize("fmt", FORMATS)
def test_reasoning_after_the_calls_changes_nothing_else(fmt: WireFormat) -> None:
    ordered = (user(1, "Fix it."), SIGNATURE_ONLY, call("toolu_1"), result("toolu_1", "A"))
    late = (user(1, "Fix it."), call("toolu_1"), SIGNATURE_ONLY, result("toolu_1", "A"))
    caps = CLAUDE_THINKING if fmt == "messages" else TEXT_ONLY
    assert encode(fmt, late, capabilities=caps, effort="high") == encode(
        fmt, ordered, capabilities=caps, effort="high"
    )


# -- item 17: a blank user message in the history ---------------------------------

BLANK_LATER = (
    user(1, "Summarize a.py."),
    say(1, "It prints A.\n\n"),
    user(2, "   "),
)


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_blank_user_message_in_an_old_log_still_makes_a_valid_body(fmt: WireFormat) -> None:
    body = encode(fmt, BLANK_LATER)
    assert violations(fmt, body) == []


def test_anthropic_final_assistant_turn_has_no_trailing_whitespace() -> None:
    body = encode("messages", BLANK_LATER)
    last = body["messages"][-1]
    assert last["role"] == "assistant"
    assert last["content"][-1]["text"] == "It prints A."


def test_anthropic_trailing_whitespace_is_kept_where_it_is_not_final() -> None:
    """Only the final turn is a prefill; earlier turns keep their bytes (the
    cache prefix)."""
    body = encode("messages", (*BLANK_LATER[:2], user(2, "And b.py?")))
    assert body["messages"][1]["content"][-1]["text"] == "It prints A.\n\n"


# -- item 18: an attachment too large for the model now in use --------------------

BIG = Attachment(name="big.log", mime_type="text/plain", path="/tmp/kun/big.log")


def big_loader(attachment: Attachment) -> bytes:
    if attachment.path == BIG.path:
        return b"x" * (32 * 1024 + 1)
    return load(attachment)


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_oversized_attachment_in_the_history_does_not_block_the_thread(
    fmt: WireFormat,
) -> None:
    history = (user(1, "Look at this log.", attachments=(BIG,)), say(1, "OK."), user(2, "Go on."))
    body = encode(fmt, history, loader=big_loader)
    assert violations(fmt, body) == []
    text = msgspec.json.encode(body).decode()
    assert "big.log" in text and "not sent" in text


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_image_a_text_only_model_cannot_take_is_a_note_in_the_history(
    fmt: WireFormat,
) -> None:
    """Attached for a vision model, then the thread moved to a text-only one."""
    huge_png = Attachment(name="s.png", mime_type="image/png", path=SCREENSHOT.path)

    def loader(_: Attachment) -> bytes:
        return load(SCREENSHOT) + b"\0" * 40_000

    history = (user(1, "What is this?", attachments=(huge_png,)), say(1, "A screen."))
    history = (*history, user(2, "Go on."))
    body = encode(fmt, history, loader=loader)
    assert violations(fmt, body) == []


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_requests_own_oversized_attachment_is_still_refused(fmt: WireFormat) -> None:
    with pytest.raises(AttachmentTooLarge, match=r"big\.log"):
        encode(fmt, (user(1, "Look."),), loader=big_loader, attachments=(BIG,))


# -- issue 23: a thread moving between Anthropic, OpenAI and Gemini ---------------

CLAUDE_STEP = (
    user(1, "Read a.py."),
    AssistantReasoning(id="r1", text="Read it first.", signature="claude-sig-1"),
    call("toolu_01A", path="a.py"),
    result("toolu_01A", "A"),
    say(1, "It prints A."),
)
OPENAI_STEP = (user(2, "And b.py?"), call("call_0", path="b.py"), result("call_0", "B"))
GEMINI_STEP = (
    user(3, "Now c.py and d.py."),
    AssistantReasoning(id="r3", text="**Two files**", thought_signature="Z2VtLXRob3VnaHQ="),
    ToolCall(
        id="call_01gem",
        call_id="call_01gem",
        name="read_file",
        arguments=msgspec.Raw(b'{"path":"c.py"}'),
        thought_signature="Z2VtLWNhbGw=",
    ),
    call("call_01gen", path="d.py"),
    result("call_01gen", "D"),
    result("call_01gem", "C"),
    AssistantText(id="t3", text="C and D.", thought_signature="Z2VtLXRleHQ="),
)
SWITCHING = (*CLAUDE_STEP, *OPENAI_STEP, *GEMINI_STEP, user(4, "Summarize."))


@pytest.mark.parametrize(
    ("fmt", "capabilities", "effort"),
    [
        ("chat_completions", TEXT_ONLY, None),
        ("responses", TEXT_ONLY, "high"),
        ("messages", CLAUDE_THINKING, "high"),
        ("gemini", GEMINI_THINKING, "high"),
    ],
)
def test_a_thread_across_anthropic_openai_and_gemini(
    fmt: WireFormat, capabilities: ModelCapabilities, effort: str | None
) -> None:
    """Each provider's reasoning, signatures and calls reach the others as
    bodies they accept: Claude's signature goes to Anthropic only, Gemini's
    to Gemini only, on the very part it came with."""
    body = encode(fmt, SWITCHING, capabilities=capabilities, effort=effort)
    assert violations(fmt, body) == []
    assert foreign_signatures(fmt, body, {"claude-sig-1"}) == []
    text = msgspec.json.encode(body)
    assert (b"claude-sig-1" in text) == (fmt == "messages")
    assert (b"Z2VtLWNhbGw=" in text) == (fmt == "gemini")
    if fmt == "gemini":
        assert sdk_violations(body) == []
        model = [c for c in body["contents"] if c["role"] == "model"]
        claude_turn, _, openai_turn, gemini_turn, answer = model
        assert all("thought" not in p for p in claude_turn["parts"]), "no Anthropic thinking"
        assert claude_turn["parts"][0]["thoughtSignature"] == SKIP_SIGNATURE
        assert openai_turn["parts"][0]["thoughtSignature"] == SKIP_SIGNATURE
        assert gemini_turn["parts"][0]["thoughtSignature"] == "Z2VtLXRob3VnaHQ="
        assert gemini_turn["parts"][1]["thoughtSignature"] == "Z2VtLWNhbGw="
        assert "thoughtSignature" not in gemini_turn["parts"][2]
        assert answer["parts"] == [{"text": "C and D.", "thoughtSignature": "Z2VtLXRleHQ="}]
    if fmt == "messages":
        thinking = [b for t in assistant_turns(body) for b in t if b["type"] == "thinking"]
        assert [b.get("signature") for b in thinking] == ["claude-sig-1"]
