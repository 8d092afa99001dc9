"""Tool-call ids and tool names as each format accepts them, whatever
produced them (issue 8, items 13 and 14).

A thread that moves between providers carries ids and names from each:
``call_0`` repeated across steps, kun's synthesized
``__kun_stream_tool_call_index_0`` (the same on every response of a relay
that sends no ids), Kimi's ``functions.read_file:1``, vLLM's 46-character
``chatcmpl-tool-…``, and names a model made up (``functions.read_file``,
``multi_tool_use.parallel``). Every body must keep each format's rules
(:mod:`.rules`), each output still answers its own call, and the mapping is
a function of the history: the same history gives the same ids.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from kun.contracts.capabilities import ModelCapabilities
from kun.contracts.items import Item, ToolCall, ToolResult
from kun.contracts.model import ModelRequest, WireFormat
from kun.model.request_codec import codec_for

from .histories import ID_FORMATS, MODEL, TOOLS, say, user
from .rules import violations

VLLM_ID = "chatcmpl-tool-" + "0123456789abcdef" * 2
KIMI_ID = "functions.read_file:1"
SYNTHETIC = "__kun_stream_tool_call_index_0"


def step(n: int, *ids: str, name: str = "read_file") -> list[Item]:
    """One model step calling ``ids`` (item ids unique per step), then their results."""
    items: list[Item] = [say(n, f"Step {n}.")]
    items += [
        ToolCall(
            id=f"tc{n}-{k}",
            call_id=call_id,
            name=name,
            arguments=msgspec.Raw(msgspec.json.encode({"path": f"f{n}{k}.py"})),
        )
        for k, call_id in enumerate(ids)
    ]
    items += [
        ToolResult(id=f"res{n}-{k}", call_id=call_id, name=name, output=f"out {n}.{k}")
        for k, call_id in enumerate(ids)
    ]
    return items


def thread(*steps: list[Item]) -> tuple[Item, ...]:
    items: list[Item] = [user(1, "Read the files.")]
    for items_of_step in steps:
        items += items_of_step
    return tuple(items)


def encode(fmt: WireFormat, history: tuple[Item, ...]) -> dict[str, Any]:
    codec = codec_for(fmt, capabilities=ModelCapabilities(known=True, tool_use=True))
    request = ModelRequest(system_prompt="sys", history=history, tools=TOOLS)
    body = codec.encode(
        request, model=MODEL[fmt], stream=True, max_tokens=None, reasoning_effort=None
    )
    decoded: dict[str, Any] = msgspec.json.decode(msgspec.json.encode(body))
    return decoded


def pairs(fmt: WireFormat, body: dict[str, Any]) -> tuple[list[str], list[str], list[str]]:
    """The call ids sent, the ids the outputs answer, and the call names."""
    if fmt == "chat_completions":
        calls = [c for m in body["messages"] for c in m.get("tool_calls") or ()]
        back = [m["tool_call_id"] for m in body["messages"] if m["role"] == "tool"]
        return [c["id"] for c in calls], back, [c["function"]["name"] for c in calls]
    if fmt == "responses":
        calls = [i for i in body["input"] if i.get("type") == "function_call"]
        back = [i["call_id"] for i in body["input"] if i.get("type") == "function_call_output"]
        return [c["call_id"] for c in calls], back, [c["name"] for c in calls]
    blocks = [b for turn in body["messages"] for b in turn["content"]]
    uses = [b for b in blocks if b["type"] == "tool_use"]
    back = [b["tool_use_id"] for b in blocks if b["type"] == "tool_result"]
    return [b["id"] for b in uses], back, [b["name"] for b in uses]


def outputs(fmt: WireFormat, body: dict[str, Any]) -> dict[str, str]:
    """Output text by the call id it answers."""
    if fmt == "chat_completions":
        return {m["tool_call_id"]: m["content"] for m in body["messages"] if m["role"] == "tool"}
    if fmt == "responses":
        items = body["input"]
        return {i["call_id"]: i["output"] for i in items if i.get("type") == "function_call_output"}
    blocks = [b for turn in body["messages"] for b in turn["content"]]
    return {b["tool_use_id"]: b["content"] for b in blocks if b["type"] == "tool_result"}


HISTORIES = {
    "repeated_call_0": thread(step(1, "call_0"), step(2, "call_0"), step(3, "call_0", "call_1")),
    "synthesized_on_every_response": thread(step(1, SYNTHETIC), step(2, SYNTHETIC)),
    "kimi_ids": thread(step(1, KIMI_ID, "functions.grep:2")),
    "vllm_46_characters": thread(step(1, VLLM_ID), step(2, VLLM_ID[:-1] + "X")),
}


@pytest.mark.parametrize("fmt", ID_FORMATS)
@pytest.mark.parametrize("case", HISTORIES)
def test_call_ids_keep_every_formats_rules_and_pairing(fmt: WireFormat, case: str) -> None:
    history = HISTORIES[case]
    body = encode(fmt, history)
    assert violations(fmt, body) == []
    sent, back, _ = pairs(fmt, body)
    assert sent == back
    assert len(sent) == sum(isinstance(item, ToolCall) for item in history)
    texts = [item.output for item in history if isinstance(item, ToolResult)]
    assert [outputs(fmt, body)[call_id] for call_id in sent] == texts, "each output its own call"
    assert encode(fmt, history) == body, "the same history gives the same ids"


@pytest.mark.parametrize("fmt", ID_FORMATS)
def test_valid_unique_ids_are_sent_as_they_are(fmt: WireFormat) -> None:
    history = thread(step(1, "call_abc", "toolu_01XyZ"), step(2, SYNTHETIC))
    assert pairs(fmt, encode(fmt, history))[0] == ["call_abc", "toolu_01XyZ", SYNTHETIC]


def test_kimi_ids_stay_verbatim_on_chat_completions_where_they_are_legal() -> None:
    """Kimi's own format: its ids go back as it wrote them."""
    body = encode("chat_completions", HISTORIES["kimi_ids"])
    assert pairs("chat_completions", body)[0] == [KIMI_ID, "functions.grep:2"]


def test_a_rewritten_id_keeps_its_origin_readable() -> None:
    body = encode("messages", HISTORIES["kimi_ids"])
    sent = pairs("messages", body)[0]
    assert all(
        s.startswith(prefix)
        for s, prefix in zip(sent, ("functions_read_file_1_", "functions_grep_2_"), strict=True)
    )


@pytest.mark.parametrize("fmt", ID_FORMATS)
def test_earlier_ids_never_change_when_later_steps_collide_with_them(fmt: WireFormat) -> None:
    """The second ``call_0`` is renamed; a later step whose id happens to be
    that new name is renamed in turn, and the earlier ids stay."""
    first = thread(step(1, "call_0"), step(2, "call_0"))
    renamed = pairs(fmt, encode(fmt, first))[0]
    longer = (*first, *step(3, renamed[1]), *step(4, "call_0"))
    sent = pairs(fmt, encode(fmt, longer))[0]
    assert sent[:2] == renamed
    assert len(set(sent)) == 4
    assert violations(fmt, encode(fmt, longer)) == []


HALLUCINATED = ("functions.read_file", "multi_tool_use.parallel", "read file", "x" * 70, "")


@pytest.mark.parametrize("fmt", ID_FORMATS)
@pytest.mark.parametrize("name", HALLUCINATED)
def test_hallucinated_tool_names_keep_every_formats_rules(fmt: WireFormat, name: str) -> None:
    history = thread(step(1, "call_1", name=name), [user(2, "Go on.")], step(3, "call_3"))
    body = encode(fmt, history)
    assert violations(fmt, body) == []
    sent, back, names = pairs(fmt, body)
    assert sent == back == ["call_1", "call_3"], "the call and its error result stay paired"
    assert names[1] == "read_file"
    assert names[0] not in {tool.name for tool in TOOLS}, "never mistaken for a real tool"


def test_a_renamed_tool_is_still_recognisable() -> None:
    body = encode("chat_completions", thread(step(1, "c", name="functions.read_file")))
    name = pairs("chat_completions", body)[2][0]
    assert name.startswith("functions_read_file")
