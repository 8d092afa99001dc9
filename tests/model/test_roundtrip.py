"""Property: any valid chunk sequence, rendered to a provider's SSE bytes
(any line endings, comments, multi-line data, pings) and cut into arbitrary
pieces, decodes to exactly those chunks."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from kun.contracts.model import (
    CompletedChunk,
    ModelStreamChunk,
    ReasoningDeltaChunk,
    TextDeltaChunk,
    ToolCallCompleteChunk,
    ToolCallDeltaChunk,
    UsageChunk,
    WireFormat,
)
from kun.contracts.usage import UsageSnapshot

from .support import Run

_text = st.text(
    alphabet=st.characters(blacklist_categories=["Cs"]), min_size=1, max_size=8
) | st.sampled_from(["\u2028", "a\x85b", "\r\n", "😀", "data: x\n\n", "[DONE]"])
_json_value = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=3), inner, max_size=2)
    ),
    max_leaves=5,
)


@dataclass
class Call:
    call_id: str
    name: str
    arguments: str
    fragments: list[str]


@dataclass
class Script:
    """What the model said, in order; ``steps`` interleaves content and calls."""

    steps: list[tuple[str, Any]] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    usage: tuple[int, int, int] | None = None


@st.composite
def scripts(draw: st.DrawFn, interleave: bool) -> Script:
    script = Script()
    for i in range(draw(st.integers(0, 3))):
        args = msgspec.json.encode(
            draw(st.dictionaries(st.text(max_size=4), _json_value, max_size=3))
        )
        text = args.decode()
        cuts = sorted(draw(st.sets(st.integers(1, max(len(text) - 1, 1)), max_size=4)))
        bounds = [0, *[c for c in cuts if c < len(text)], len(text)]
        fragments = [text[a:b] for a, b in itertools.pairwise(bounds) if text[a:b]]
        script.calls.append(
            Call(f"call_{i}", draw(st.sampled_from(["read", "write", "ls"])), text, fragments)
        )
    content = draw(st.lists(st.tuples(st.sampled_from(["text", "reasoning"]), _text), max_size=5))
    queues: list[list[tuple[str, Any]]] = [[(kind, value)] for kind, value in content]
    for call in script.calls:
        events: list[tuple[str, Any]] = [("header", call)]
        events += [("fragment", (call, piece)) for piece in call.fragments]
        if interleave:
            queues.append(events)
        else:
            queues.append([("call", call)])
    while queues:
        queue = queues[draw(st.integers(0, len(queues) - 1))] if interleave else queues[0]
        script.steps.append(queue.pop(0))
        if not queue:
            queues.remove(queue)
    if draw(st.booleans()):
        script.usage = (
            draw(st.integers(0, 9999)),
            draw(st.integers(0, 999)),
            draw(st.integers(0, 50)),
        )
    return script


# -- rendering ---------------------------------------------------------------


@st.composite
def framing(draw: st.DrawFn) -> Callable[[str | None, Any], str]:
    """A frame renderer with a random line ending, JSON layout and comments."""
    end = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    pretty = draw(st.booleans())
    comments = draw(st.booleans())

    def frame(event: str | None, body: Any) -> str:
        data = (
            body
            if isinstance(body, str)
            else (
                json.dumps(body, indent=1, ensure_ascii=False)
                if pretty
                else msgspec.json.encode(body).decode()
            )
        )
        lines = [f": ping{end}"] if comments else []
        if event is not None:
            lines.append(f"event: {event}{end}")
        lines += [f"data: {line}{end}" for line in data.split("\n")]
        return "".join(lines) + end

    return frame


def render_chat(
    script: Script, frame: Callable[[str | None, Any], str]
) -> tuple[str, list[ModelStreamChunk]]:
    out: list[str] = []
    expected: list[ModelStreamChunk] = []
    ordinals: dict[str, int] = {}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> None:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        out.append(frame(None, {"id": "chatcmpl-p", "model": "m", "choices": [choice]}))

    for kind, value in script.steps:
        if kind == "text":
            chunk({"content": value})
            expected.append(TextDeltaChunk(text=value))
        elif kind == "reasoning":
            chunk({"reasoning_content": value})
            expected.append(ReasoningDeltaChunk(text=value))
        elif kind == "header":
            ordinals[value.call_id] = len(ordinals)
            fn = {"name": value.name, "arguments": ""}
            chunk(
                {
                    "tool_calls": [
                        {"index": ordinals[value.call_id], "id": value.call_id, "function": fn}
                    ]
                }
            )
            expected.append(
                ToolCallDeltaChunk(
                    call_id=value.call_id, name=value.name, index=ordinals[value.call_id]
                )
            )
        else:
            call, piece = value
            chunk(
                {
                    "tool_calls": [
                        {"index": ordinals[call.call_id], "function": {"arguments": piece}}
                    ]
                }
            )
            expected.append(
                ToolCallDeltaChunk(
                    call_id=call.call_id, arguments=piece, index=ordinals[call.call_id]
                )
            )
    chunk({}, "tool_calls" if script.calls else "stop")
    expected += [_complete(call, i) for i, call in enumerate(_by_header(script))]
    if script.usage is not None:
        prompt, completion, cached = script.usage
        usage = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "prompt_tokens_details": {"cached_tokens": cached},
        }
        out.append(frame(None, {"id": "chatcmpl-p", "model": "m", "choices": [], "usage": usage}))
        expected.append(
            UsageChunk(
                usage=UsageSnapshot(
                    prompt_tokens=prompt,
                    completion_tokens=completion,
                    cache_hit_tokens=cached,
                    cache_miss_tokens=max(prompt - cached, 0),
                ),
                request_id="chatcmpl-p",
                model="m",
            )
        )
    out.append(frame(None, "[DONE]"))
    expected.append(CompletedChunk(stop_reason="tool_calls" if script.calls else "stop"))
    return "".join(out), expected


def render_messages(
    script: Script, frame: Callable[[str | None, Any], str]
) -> tuple[str, list[ModelStreamChunk]]:
    def event(kind: str, **body: Any) -> str:
        return frame(kind, {"type": kind, **body})

    usage = script.usage or (0, 0, 0)
    out = [
        event(
            "message_start",
            message={
                "id": "msg_p",
                "model": "m",
                "content": [],
                "usage": {
                    "input_tokens": usage[0],
                    "cache_read_input_tokens": usage[2],
                    "output_tokens": 1,
                },
            },
        )
    ]
    expected: list[ModelStreamChunk] = []
    for index, (kind, value) in enumerate(script.steps):
        if kind == "call":
            block = {"type": "tool_use", "id": value.call_id, "name": value.name, "input": {}}
            out.append(event("content_block_start", index=index, content_block=block))
            ordinal = sum(isinstance(c, ToolCallCompleteChunk) for c in expected)
            expected.append(
                ToolCallDeltaChunk(call_id=value.call_id, name=value.name, index=ordinal)
            )
            for piece in value.fragments:
                delta = {"type": "input_json_delta", "partial_json": piece}
                out.append(event("content_block_delta", index=index, delta=delta))
                expected.append(
                    ToolCallDeltaChunk(call_id=value.call_id, arguments=piece, index=ordinal)
                )
            out.append(event("content_block_stop", index=index))
            expected.append(_complete(value, ordinal))
            continue
        block_type, field_name = ("text", "text") if kind == "text" else ("thinking", "thinking")
        out.append(
            event(
                "content_block_start",
                index=index,
                content_block={"type": block_type, field_name: ""},
            )
        )
        out.append(event("ping"))
        delta = {"type": f"{block_type}_delta", field_name: value}
        out.append(event("content_block_delta", index=index, delta=delta))
        expected.append(
            TextDeltaChunk(text=value) if kind == "text" else ReasoningDeltaChunk(text=value)
        )
        out.append(event("content_block_stop", index=index))
    stop = "tool_use" if script.calls else "end_turn"
    out.append(
        event("message_delta", delta={"stop_reason": stop}, usage={"output_tokens": usage[1]})
    )
    out.append(event("message_stop"))
    expected.append(
        UsageChunk(
            usage=UsageSnapshot(
                prompt_tokens=usage[0] + usage[2],
                completion_tokens=usage[1],
                cache_hit_tokens=usage[2],
                cache_miss_tokens=usage[0],
            ),
            request_id="msg_p",
            model="m",
        )
    )
    expected.append(CompletedChunk(stop_reason="tool_calls" if script.calls else "stop"))
    return "".join(out), expected


def render_responses(
    script: Script, frame: Callable[[str | None, Any], str]
) -> tuple[str, list[ModelStreamChunk]]:
    def event(kind: str, **body: Any) -> str:
        return frame(kind, {"type": kind, **body})

    out = [event("response.created", response={"id": "resp_p", "model": "m", "output": []})]
    expected: list[ModelStreamChunk] = []
    positions: dict[str, int] = {}
    for position, (kind, value) in enumerate(script.steps):
        if kind == "text":
            out.append(event("response.output_text.delta", output_index=position, delta=value))
            expected.append(TextDeltaChunk(text=value))
        elif kind == "reasoning":
            out.append(
                event("response.reasoning_summary_text.delta", output_index=position, delta=value)
            )
            expected.append(ReasoningDeltaChunk(text=value))
        elif kind == "header":
            positions[value.call_id] = position
            item = {
                "type": "function_call",
                "id": f"fc_{position}",
                "call_id": value.call_id,
                "name": value.name,
                "arguments": "",
            }
            out.append(event("response.output_item.added", output_index=position, item=item))
            expected.append(
                ToolCallDeltaChunk(call_id=value.call_id, name=value.name, index=len(positions) - 1)
            )
        else:
            call, piece = value
            ordinal = list(positions).index(call.call_id)
            out.append(
                event(
                    "response.function_call_arguments.delta",
                    output_index=positions[call.call_id],
                    delta=piece,
                )
            )
            expected.append(
                ToolCallDeltaChunk(call_id=call.call_id, arguments=piece, index=ordinal)
            )
    for ordinal, call in enumerate(_by_header(script)):
        item = {
            "type": "function_call",
            "call_id": call.call_id,
            "name": call.name,
            "arguments": call.arguments,
        }
        out.append(
            event("response.output_item.done", output_index=positions[call.call_id], item=item)
        )
        expected.append(_complete(call, ordinal))
    usage = script.usage or (0, 0, 0)
    out.append(
        event(
            "response.completed",
            response={
                "id": "resp_p",
                "model": "m",
                "status": "completed",
                "usage": {
                    "input_tokens": usage[0],
                    "output_tokens": usage[1],
                    "input_tokens_details": {"cached_tokens": usage[2]},
                },
            },
        )
    )
    expected.append(
        UsageChunk(
            usage=UsageSnapshot(
                prompt_tokens=usage[0],
                completion_tokens=usage[1],
                cache_hit_tokens=usage[2],
                cache_miss_tokens=max(usage[0] - usage[2], 0),
            ),
            request_id="resp_p",
            model="m",
        )
    )
    expected.append(CompletedChunk(stop_reason="tool_calls" if script.calls else "stop"))
    return "".join(out), expected


def _by_header(script: Script) -> list[Call]:
    return [value for kind, value in script.steps if kind in ("header", "call")]


def _complete(call: Call, ordinal: int) -> ToolCallCompleteChunk:
    return ToolCallCompleteChunk(
        call_id=call.call_id,
        name=call.name,
        arguments=msgspec.Raw(call.arguments.encode()),
        repair="none",
        arguments_text=call.arguments,
        index=ordinal,
    )


@st.composite
def pieces_of(draw: st.DrawFn, data: bytes) -> list[bytes]:
    cuts = sorted(draw(st.sets(st.integers(0, len(data)), max_size=25)))
    bounds = [0, *cuts, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds)]


def check(
    fmt: WireFormat, rendered: tuple[str, list[ModelStreamChunk]], data: st.DataObject
) -> None:
    text, expected = rendered
    stream = text.encode()
    assert Run(fmt, [stream]).chunks == expected
    assert Run(fmt, data.draw(pieces_of(stream))).chunks == expected


@settings(max_examples=150, deadline=None)
@given(script=scripts(interleave=True), frame=framing(), data=st.data())
def test_chat_completions_roundtrip(script: Script, frame: Any, data: st.DataObject) -> None:
    check("chat_completions", render_chat(script, frame), data)


@settings(max_examples=150, deadline=None)
@given(script=scripts(interleave=False), frame=framing(), data=st.data())
def test_messages_roundtrip(script: Script, frame: Any, data: st.DataObject) -> None:
    check("messages", render_messages(script, frame), data)


@settings(max_examples=150, deadline=None)
@given(script=scripts(interleave=True), frame=framing(), data=st.data())
def test_responses_roundtrip(script: Script, frame: Any, data: st.DataObject) -> None:
    check("responses", render_responses(script, frame), data)


def test_chunks_roundtrip_through_the_tagged_union() -> None:
    chunks: list[ModelStreamChunk] = [
        TextDeltaChunk(text="a"),
        ReasoningDeltaChunk(text="", signature="s"),
        ToolCallDeltaChunk(call_id="c", name="f", index=1),
        ToolCallCompleteChunk(call_id="c", name="f", arguments=msgspec.Raw(b'{"a":1}'), index=1),
        UsageChunk(usage=UsageSnapshot(prompt_tokens=1)),
        CompletedChunk(stop_reason="tool_calls"),
    ]
    encoded = msgspec.json.encode(chunks)
    assert b'"kind":"tool_call_complete"' in encoded
    assert msgspec.json.decode(encoded, type=list[ModelStreamChunk]) == chunks
