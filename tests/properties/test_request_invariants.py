"""For ANY item history — including broken ones — every request body keeps
each provider's hard rules, and the context instructions come after the
history.

Histories are arbitrary interleavings of every item type with statuses of
every kind, call ids drawn from a small pool (so ids repeat, results go
missing, arrive twice, arrive for calls that never were, or arrive after the
next step), steering messages between calls and results, GUI-only items
anywhere, attachments on user messages and tool results.

Threads that switch provider and model mid-thread (Gemini among them:
id-less calls, thought signatures on text, thoughts and calls)
(:func:`~tests.properties.request_strategies.switching_threads`) carry each
producer's ids, names and reasoning into every other format: their bodies
keep the same rules — ids unique and in each format's pattern and length,
every output answering exactly one call, tool names in
``^[a-zA-Z0-9_-]{1,64}$``, no empty message, no whitespace at the end of a
final Anthropic assistant turn, DeepSeek's thinking block on every
tool-using turn, at least one Anthropic message even when the only user
message was blank, no Anthropic prefill with thinking on, Gemini's
contents alternating with every call answered by name and position in
the next content, no signature sent to a provider that did not make it — and Claude keeps
thinking on when the step that opens the final turn has a signed thinking
block, wherever the log recorded it and whatever came before the user's
last (possibly blank) message. Ids of settled steps never change as the
thread grows (the cache prefix).
"""

from __future__ import annotations

from typing import Any

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from kun.contracts.capabilities import ModelCapabilities
from kun.contracts.items import (
    Approval,
    AssistantReasoning,
    AssistantText,
    Compaction,
    ErrorItem,
    Item,
    Plan,
    ToolCall,
    ToolResult,
    UserInput,
    UserMessage,
    WarningItem,
)
from kun.contracts.model import ModelRequest, WireFormat
from kun.domain.history import HistoryRepair, ModelEntry, repair_history
from kun.model.body import encode_body
from kun.model.request_codec import codec_for
from tests.model.request.histories import (
    CLAUDE_THINKING,
    DEEPSEEK_THINKING,
    FORMATS,
    GEMINI_THINKING,
    ID_FORMATS,
    SCREENSHOT,
    TEXT_ONLY,
    TOOLS,
    VISION,
    load,
)
from tests.model.request.rules import (
    anthropic_thinking_dropped,
    foreign_signatures,
    opening_step_signed,
    violations,
)
from tests.properties.request_strategies import switching_threads

CONTEXT = "<context marker>"
CALL_IDS = st.sampled_from(["c0", "c1", "c2", "c3", "", "__kun_stream_tool_call_index_0"])
TEXTS = st.sampled_from(["", " ", "hi", "Reading the file.", "done\n"])
ATTACHMENTS = st.sampled_from([(), (), (SCREENSHOT,)])
OUTPUT_STATUS = st.sampled_from(["completed", "completed", "aborted", "failed", "in_progress"])
CALL_STATUS = st.sampled_from(
    ["completed", "completed", "failed", "aborted", "in_progress", "unknown_after_crash"]
)
ARGS = st.sampled_from([b"{}", b'{"path":"a.py"}', b"[1]", b"{broken"])


def _item(kind: str, draw: st.DrawFn) -> Item:
    if kind == "user":
        return UserMessage(
            id="",
            text=draw(TEXTS),
            steered=draw(st.booleans()),
            attachments=draw(ATTACHMENTS),
        )
    if kind == "text":
        return AssistantText(id="", text=draw(TEXTS), status=draw(OUTPUT_STATUS))
    if kind == "reasoning":
        signature = draw(st.sampled_from([None, "sig"]))
        return AssistantReasoning(
            id="", text=draw(TEXTS), signature=signature, status=draw(OUTPUT_STATUS)
        )
    if kind == "call":
        return ToolCall(
            id="",
            call_id=draw(CALL_IDS),
            name="read_file",
            arguments=msgspec.Raw(draw(ARGS)),
            status=draw(CALL_STATUS),
        )
    if kind == "result":
        return ToolResult(
            id="",
            call_id=draw(CALL_IDS),
            name="read_file",
            output=draw(TEXTS),
            is_error=draw(st.booleans()),
            status=draw(st.sampled_from(["completed", "completed", "in_progress"])),
            attachments=draw(ATTACHMENTS),
        )
    return draw(
        st.sampled_from(
            [
                Approval(id="", status="approved"),
                UserInput(id="", question="?", status="answered", answer="yes"),
                Plan(id="", markdown="# plan"),
                WarningItem(id="", code="w", message="w"),
                ErrorItem(id="", code="e", message="e"),
                Compaction(id="", summary="Earlier: things happened."),
            ]
        )
    )


KINDS = st.sampled_from(
    ["user", "text", "reasoning", "call", "call", "result", "result", "result", "other"]
)


def _block(draw: st.DrawFn) -> list[Item]:
    """A step calling tools, then results for most of its calls in any order,
    with other items slipped in between (the common shape, often broken)."""
    items: list[Item] = [_item(draw(st.sampled_from(["text", "reasoning"])), draw)]
    ids = draw(st.lists(CALL_IDS, min_size=1, max_size=3, unique=True))
    for call_id in ids:
        call = _item("call", draw)
        items.append(msgspec.structs.replace(call, call_id=call_id, status="completed"))
    answered = draw(st.permutations(ids))[: draw(st.integers(len(ids) - 1, len(ids)))]
    for call_id in answered:
        if draw(st.integers(0, 4)) == 0:
            items.append(_item(draw(st.sampled_from(["user", "other"])), draw))
        result = _item("result", draw)
        items.append(msgspec.structs.replace(result, call_id=call_id, status="completed"))
    return items


@st.composite
def histories(draw: st.DrawFn) -> tuple[Item, ...]:
    items: list[Item] = []
    for _ in range(draw(st.integers(0, 8))):
        if draw(st.booleans()):
            items += _block(draw)
        else:
            items += [_item(kind, draw) for kind in draw(st.lists(KINDS, max_size=4))]
    return tuple(msgspec.structs.replace(item, id=f"i{n}") for n, item in enumerate(items))


SETTINGS: list[tuple[WireFormat, ModelCapabilities, str | None, str | None]] = [
    ("chat_completions", TEXT_ONLY, None, None),
    ("chat_completions", VISION, None, None),
    ("chat_completions", DEEPSEEK_THINKING, "https://api.deepseek.com", "high"),
    ("responses", VISION, None, "high"),
    ("messages", TEXT_ONLY, None, None),
    ("messages", VISION, None, "off"),
    ("messages", CLAUDE_THINKING, None, "high"),
    ("messages", DEEPSEEK_THINKING, "https://api.deepseek.com/anthropic", "high"),
    ("gemini", VISION, None, None),
    ("gemini", GEMINI_THINKING, None, "high"),
]


def encode(
    fmt: WireFormat,
    capabilities: ModelCapabilities,
    url: str | None,
    effort: str | None,
    history: tuple[Item, ...],
    context: str | None = CONTEXT,
) -> dict[str, Any]:
    codec = codec_for(fmt, capabilities=capabilities, endpoint_url=url, load_attachment=load)
    request = ModelRequest(
        system_prompt="sys",
        history=history,
        context_instructions=context,
        tools=TOOLS,
    )
    body = codec.encode(request, model="m", stream=True, max_tokens=None, reasoning_effort=effort)
    decoded: dict[str, Any] = msgspec.json.decode(msgspec.json.encode(body))
    return decoded


def context_is_last(fmt: WireFormat, body: dict[str, Any]) -> bool:
    if msgspec.json.encode(body).count(CONTEXT.encode()) != 1:
        return False
    if fmt == "chat_completions":
        return bool(body["messages"][-1] == {"role": "system", "content": CONTEXT})
    if fmt == "responses":
        return bool(body["input"][-1] == {"role": "developer", "content": CONTEXT})
    if fmt == "gemini":
        final = body["contents"][-1]
        return bool(final["role"] == "user" and final["parts"][-1] == {"text": CONTEXT})
    last = body["messages"][-1]
    return bool(last["role"] == "user" and last["content"][-1] == {"type": "text", "text": CONTEXT})


@given(histories(), st.booleans())
def test_every_body_keeps_the_providers_rules(
    history: tuple[Item, ...], with_context: bool
) -> None:
    for fmt, capabilities, url, effort in SETTINGS:
        context = CONTEXT if with_context else None
        body = encode(fmt, capabilities, url, effort, history, context)
        broken = violations(fmt, body)
        if capabilities is CLAUDE_THINKING:
            broken += anthropic_thinking_dropped(history, body)
        assert broken == [], (fmt, capabilities.reasoning_protocol)
        if with_context:
            assert context_is_last(fmt, body), fmt


@given(histories())
def test_repaired_steps_answer_every_call_exactly_once_in_order(
    history: tuple[Item, ...],
) -> None:
    for entry in repair_history(history):
        if isinstance(entry, ModelEntry):
            calls = entry.calls
            assert [r.call_id for r in entry.results] == [c.call_id for c in calls] or (
                not calls and not entry.results
            )
            assert len({c.call_id for c in calls}) == len(calls)


@given(histories(), st.data())
def test_the_fold_only_appends_settled_entries(
    history: tuple[Item, ...], data: st.DataObject
) -> None:
    split = data.draw(st.integers(0, len(history)))
    repair = HistoryRepair().extend(history[:split])
    settled = list(repair.settled)
    assert repair.entries() == repair_history(history[:split])
    assert list(repair_history(history)[: len(settled)]) == settled


@given(histories(), st.data())
def test_a_warm_codec_encodes_like_a_fresh_one(
    history: tuple[Item, ...], data: st.DataObject
) -> None:
    fmt: WireFormat = data.draw(st.sampled_from(FORMATS))
    codec = codec_for(fmt, capabilities=VISION, load_attachment=load)
    for end in sorted(data.draw(st.lists(st.integers(0, len(history)), max_size=4))):
        codec.encode(
            ModelRequest(history=history[:end]),
            model="m",
            stream=False,
            max_tokens=None,
            reasoning_effort=None,
        )
    request = ModelRequest(history=history, context_instructions=CONTEXT)
    warm = codec.encode(request, model="m", stream=False, max_tokens=None, reasoning_effort=None)
    fresh = codec_for(fmt, capabilities=VISION, load_attachment=load).encode(
        request, model="m", stream=False, max_tokens=None, reasoning_effort=None
    )
    assert msgspec.json.encode(warm) == msgspec.json.encode(fresh)


@given(switching_threads(), st.booleans())
def test_threads_that_switch_provider_keep_every_formats_rules(
    history: tuple[Item, ...], with_context: bool
) -> None:
    """Without context instructions the body may end on the model's answer:
    the final-turn rules apply. A history with nothing left to send (an old
    or imported log whose only user message was blank) still gives a body
    with a message."""
    anthropic = {i.signature for i in history if isinstance(i, AssistantReasoning) and i.signature}
    for fmt, capabilities, url, effort in SETTINGS:
        body = encode(fmt, capabilities, url, effort, history, CONTEXT if with_context else None)
        broken = violations(fmt, body) + foreign_signatures(fmt, body, anthropic)
        if capabilities is CLAUDE_THINKING:
            broken += anthropic_thinking_dropped(history, body)
        assert broken == [], (fmt, capabilities.reasoning_protocol)
        if with_context:
            assert context_is_last(fmt, body), fmt


@given(switching_threads(last="claude"))
def test_claude_keeps_thinking_when_the_final_turn_starts_signed(
    history: tuple[Item, ...],
) -> None:
    """Whatever order the log recorded the thinking block in (a
    signature-only one used to land after the calls), and whatever answer
    came before a blank last prompt, thinking stays on."""
    if not opening_step_signed(history):
        return
    body = encode("messages", CLAUDE_THINKING, None, "high", history)
    assert body.get("thinking", {}).get("type") == "enabled"
    assert violations("messages", body) == []


def _wire_ids(fmt: WireFormat, body: dict[str, Any]) -> list[str]:
    if fmt == "chat_completions":
        return [c["id"] for m in body["messages"] for c in m.get("tool_calls") or ()]
    if fmt == "responses":
        return [i["call_id"] for i in body["input"] if i.get("type") == "function_call"]
    return [b["id"] for t in body["messages"] for b in t["content"] if b["type"] == "tool_use"]


@given(switching_threads(), st.data())
def test_wire_ids_of_settled_steps_never_change_as_the_thread_grows(
    history: tuple[Item, ...], data: st.DataObject
) -> None:
    split = data.draw(st.integers(0, len(history)))
    settled = HistoryRepair().extend(history[:split]).settled
    kept = sum(len(e.calls) for e in settled if isinstance(e, ModelEntry))
    for fmt in ID_FORMATS:
        shorter = _wire_ids(fmt, encode(fmt, TEXT_ONLY, None, None, history[:split]))
        longer = _wire_ids(fmt, encode(fmt, TEXT_ONLY, None, None, history))
        assert shorter[:kept] == longer[:kept], fmt


@given(st.one_of(histories(), switching_threads()), st.data())
def test_a_body_in_pieces_is_the_whole_body_byte_for_byte(
    history: tuple[Item, ...], data: st.DataObject
) -> None:
    """Whatever the codec encoded before (earlier steps of the thread, with
    or without context instructions), the pieces a step sends
    (:mod:`kun.model.body`) are the bytes of its ``dict`` encoded whole."""
    for fmt, capabilities, url, effort in SETTINGS:
        warm = codec_for(fmt, capabilities=capabilities, endpoint_url=url, load_attachment=load)
        ends = sorted(data.draw(st.lists(st.integers(0, len(history)), max_size=3)))
        for end in [*ends, len(history)]:
            context = data.draw(st.sampled_from([None, CONTEXT]))
            request = ModelRequest(
                system_prompt="sys",
                history=history[:end],
                context_instructions=context,
                tools=TOOLS,
            )
            options: dict[str, Any] = {"model": "m", "stream": True, "max_tokens": None}
            body = encode_body(warm, request, reasoning_effort=effort, **options)
            fresh = codec_for(
                fmt, capabilities=capabilities, endpoint_url=url, load_attachment=load
            )
            whole = fresh.encode(request, reasoning_effort=effort, **options)
            assert body.join() == msgspec.json.encode(whole), (fmt, end)
