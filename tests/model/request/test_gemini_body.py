"""The Gemini body: what it holds, the schema subset, and properties over
random histories checked against Google's own request types."""

from __future__ import annotations

from collections import Counter
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kun.contracts.capabilities import ModelCapabilities
from kun.contracts.items import AssistantReasoning, AssistantText, Item, ToolCall
from kun.contracts.model import ModelRequest, ToolSpec
from kun.domain.history import ModelEntry, repair_history
from kun.model.request.gemini import SKIP_SIGNATURE, gemini_name
from kun.model.request.gemini_schema import MAX_DEPTH, gemini_parameters, gemini_schema
from kun.model.request_codec import codec_for
from tests.properties.request_strategies import switching_threads
from tests.properties.test_request_invariants import histories

from .gemini_sdk_check import sdk_violations
from .histories import (
    GEMINI_THINKING,
    SCREENSHOT,
    TEXT_ONLY,
    TOOLS,
    VISION,
    call,
    load,
    result,
    say,
    user,
)
from .rules import gemini_violations


def encode(
    history: tuple[Item, ...],
    *,
    capabilities: ModelCapabilities = VISION,
    model: str = "gemini-2.5-flash",
    effort: str | None = None,
    max_tokens: int | None = None,
    **fields: Any,
) -> dict[str, Any]:
    codec = codec_for("gemini", capabilities=capabilities, load_attachment=load)
    fields.setdefault("tools", TOOLS)
    request = ModelRequest(system_prompt="sys", history=history, **fields)
    body = codec.encode(
        request, model=model, stream=True, max_tokens=max_tokens, reasoning_effort=effort
    )
    decoded: dict[str, Any] = msgspec.json.decode(msgspec.json.encode(body))
    return decoded


SIGNED_STEP = (
    user(1, "Read a.py and b.py."),
    AssistantReasoning(id="r1", text="**Reading** both", thought_signature="dGhvdWdodA=="),
    AssistantText(id="t1", text="Reading them.", thought_signature="dGV4dA=="),
    ToolCall(
        id="c1",
        call_id="call_01a",
        name="read_file",
        arguments=msgspec.Raw(b'{"path":"a.py"}'),
        thought_signature="Y2FsbA==",
    ),
    call("call_01b", path="b.py"),
    result("call_01b", "B"),
    result("call_01a", "A"),
)


def test_a_signed_step_goes_back_part_for_part() -> None:
    body = encode(SIGNED_STEP, context_instructions="ctx")
    assert body["systemInstruction"] == {"parts": [{"text": "sys"}]}
    first, model, answers = body["contents"]
    assert first == {"role": "user", "parts": [{"text": "Read a.py and b.py."}]}
    assert model == {
        "role": "model",
        "parts": [
            {"text": "**Reading** both", "thought": True, "thoughtSignature": "dGhvdWdodA=="},
            {"text": "Reading them.", "thoughtSignature": "dGV4dA=="},
            {
                "functionCall": {"name": "read_file", "args": {"path": "a.py"}},
                "thoughtSignature": "Y2FsbA==",
            },
            {"functionCall": {"name": "read_file", "args": {"path": "b.py"}}},
        ],
    }
    assert answers == {
        "role": "user",
        "parts": [
            {"functionResponse": {"name": "read_file", "response": {"output": "A"}}},
            {"functionResponse": {"name": "read_file", "response": {"output": "B"}}},
            {"text": "ctx"},
        ],
    }, "answered in call order, whatever order the results were logged in"
    assert gemini_violations(body) == [] and sdk_violations(body) == []


def test_no_id_goes_out_and_errors_are_error_responses() -> None:
    history = (user(1, "go"), call("call_1"), result("call_1", "boom", is_error=True))
    body = encode(history)
    text = msgspec.json.encode(body)
    assert b'"id"' not in text and b"call_1" not in text
    response = body["contents"][-1]["parts"][0]["functionResponse"]
    assert response == {"name": "read_file", "response": {"error": "boom"}}


def test_another_providers_calls_get_the_stand_in_signature_on_gemini_3_only() -> None:
    history = (user(1, "go"), call("toolu_1"), call("toolu_2"), result("toolu_1", "A"))
    history = (*history, result("toolu_2", "B"))
    new = encode(history, model="gemini-3-pro-preview")["contents"][1]["parts"]
    assert new[0]["thoughtSignature"] == SKIP_SIGNATURE
    assert "thoughtSignature" not in new[1], "only the first call of a step carries one"
    old = encode(history, model="gemini-2.5-flash")["contents"][1]["parts"]
    assert all("thoughtSignature" not in part for part in old)


def test_other_reasoning_is_not_sent_and_anthropic_signatures_never() -> None:
    history = (
        user(1, "Hi"),
        AssistantReasoning(id="r", text="Claude thinks", signature="claude-sig"),
        AssistantReasoning(id="d", text="DeepSeek thinks"),
        say(1, "Hello."),
        user(2, "Bye"),
    )
    body = encode(history)
    assert body["contents"][1] == {"role": "model", "parts": [{"text": "Hello."}]}
    assert b"claude-sig" not in msgspec.json.encode(body)


def test_roles_alternate_starting_with_the_user() -> None:
    history = (say(1, "Earlier answer."), say(2, "Another."), user(1, "a"), user(2, "b"))
    contents = encode(history)["contents"]
    assert [c["role"] for c in contents] == ["user", "model", "user"]
    assert contents[0]["parts"] == [{"text": "(earlier conversation omitted)"}]
    assert [p["text"] for p in contents[1]["parts"]] == ["Earlier answer.", "Another."]
    assert encode(())["contents"] == [{"role": "user", "parts": [{"text": "(empty message)"}]}]


def test_images_are_inline_data() -> None:
    history = (user(1, "What is this?", attachments=(SCREENSHOT,)),)
    parts = encode(history)["contents"][0]["parts"]
    assert parts[1]["inlineData"]["mimeType"] == "image/png"
    assert parts[1]["inlineData"]["data"]
    text_only = encode(history, capabilities=TEXT_ONLY)["contents"][0]["parts"]
    assert all("inlineData" not in part for part in text_only)


def test_tool_output_images_follow_the_responses() -> None:
    history = (user(1, "Look."), call("c1"), result("c1", "shot", attachments=(SCREENSHOT,)))
    parts = encode(history)["contents"][-1]["parts"]
    assert "functionResponse" in parts[0]
    assert parts[1]["text"].startswith("Images returned by tool call")
    assert "inlineData" in parts[2]


@pytest.mark.parametrize(
    ("effort", "model", "max_tokens", "expected"),
    [
        (None, "gemini-2.5-flash", None, None),
        ("high", "gemini-2.5-flash", None, {"thinkingBudget": 24576, "includeThoughts": True}),
        ("on", "gemini-2.5-flash", None, {"thinkingBudget": -1, "includeThoughts": True}),
        ("low", "gemini-2.5-flash", 1000, {"thinkingBudget": 500, "includeThoughts": True}),
        ("off", "gemini-2.5-flash", None, {"thinkingBudget": 0, "includeThoughts": False}),
        ("off", "gemini-2.5-pro", None, {"thinkingBudget": 128, "includeThoughts": False}),
    ],
)
def test_thinking_config_follows_the_effort(
    effort: str | None, model: str, max_tokens: int | None, expected: dict[str, Any] | None
) -> None:
    body = encode(
        (user(1, "hi"),),
        capabilities=GEMINI_THINKING,
        model=model,
        effort=effort,
        max_tokens=max_tokens,
    )
    config = body.get("generationConfig", {})
    assert config.get("thinkingConfig") == expected
    if max_tokens is not None:
        assert config["maxOutputTokens"] == max_tokens
    assert sdk_violations(body) == []


def test_a_model_that_does_not_think_gets_no_thinking_config() -> None:
    assert "generationConfig" not in encode((user(1, "hi"),), effort="high")


# -- schemas -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        (
            {
                "type": "object",
                "properties": {"a": {"type": "string"}},
                "additionalProperties": False,
                "$schema": "http://json-schema.org/draft-07/schema#",
                "required": ["a", "ghost"],
            },
            {"type": "OBJECT", "properties": {"a": {"type": "STRING"}}, "required": ["a"]},
        ),
        (
            {
                "type": "object",
                "properties": {"n": {"$ref": "#/$defs/N"}},
                "$defs": {"N": {"type": "integer", "format": "int64", "minimum": 0}},
            },
            {
                "type": "OBJECT",
                "properties": {"n": {"type": "INTEGER", "format": "int64", "minimum": 0}},
            },
        ),
        (
            {"type": "object", "properties": {"k": {"const": "x"}, "e": {"enum": [1, 2]}}},
            {"type": "OBJECT", "properties": {"k": {"type": "STRING", "enum": ["x"]}, "e": {}}},
        ),
        (
            {
                "type": "object",
                "properties": {
                    "v": {"type": ["string", "null"]},
                    "w": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
                    "u": {"oneOf": [{"type": "string"}, {"type": "number"}]},
                },
            },
            {
                "type": "OBJECT",
                "properties": {
                    "v": {"type": "STRING", "nullable": True},
                    "w": {"type": "INTEGER", "nullable": True},
                    "u": {"anyOf": [{"type": "STRING"}, {"type": "NUMBER"}]},
                },
            },
        ),
        (
            {
                "allOf": [
                    {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
                    {"properties": {"b": {"type": "array"}}},
                ]
            },
            {
                "type": "OBJECT",
                "properties": {
                    "b": {"type": "ARRAY", "items": {"type": "STRING"}},
                    "a": {"type": "STRING"},
                },
                "required": ["a"],
            },
        ),
        (
            {"type": "object", "properties": {"s": {"type": "string", "format": "uri"}}},
            {"type": "OBJECT", "properties": {"s": {"type": "STRING"}}},
        ),
    ],
    ids=["closed-object", "ref", "const-and-numeric-enum", "unions", "all-of", "format"],
)
def test_schemas_are_reduced_to_geminis_subset(schema: Any, expected: Any) -> None:
    assert gemini_schema(schema) == expected


def test_a_reference_cycle_is_cut() -> None:
    schema = {
        "type": "object",
        "properties": {"node": {"$ref": "#/$defs/Node"}},
        "$defs": {"Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}}},
    }
    reduced = gemini_schema(schema)
    depth, at = 0, reduced
    while "properties" in at:
        at = next(iter(at["properties"].values()))
        depth += 1
    assert depth <= MAX_DEPTH + 1 and at == {"type": "OBJECT"}


def test_a_tool_without_parameters_declares_none() -> None:
    assert gemini_parameters({"type": "object", "properties": {}}) is None
    body = encode((user(1, "hi"),), tools=(ToolSpec(name="now"),))
    assert body["tools"] == [{"functionDeclarations": [{"name": "now"}]}]


def test_names_gemini_refuses_get_a_prefix_everywhere() -> None:
    assert gemini_name("read_file") == "read_file"
    assert gemini_name("ns.tool:v1") == "ns.tool:v1"
    assert gemini_name("1tool") == "_1tool"
    assert gemini_name("-x" * 40) == ("_" + "-x" * 40)[:64]
    history = (user(1, "go"), call("c1", name="9lives"), result("c1", "A", name="9lives"))
    body = encode(history, tools=(ToolSpec(name="9lives"),))
    assert gemini_violations(body) == []
    assert body["tools"][0]["functionDeclarations"][0]["name"] == "_9lives"


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)
_schema_keys = st.sampled_from(
    [
        "type",
        "properties",
        "items",
        "required",
        "enum",
        "const",
        "anyOf",
        "oneOf",
        "allOf",
        "$ref",
        "$defs",
        "additionalProperties",
        "format",
        "description",
        "nullable",
        "minimum",
        "pattern",
        "title",
        "default",
        "not",
        "examples",
        "minItems",
        "maxLength",
    ]
)
_types = st.sampled_from(["string", "integer", "number", "boolean", "array", "object", "null"])
_schemas = st.recursive(
    st.fixed_dictionaries({"type": _types | st.lists(_types, max_size=3)}),
    lambda inner: st.dictionaries(
        _schema_keys,
        inner
        | st.dictionaries(st.text(max_size=3), inner, max_size=3)
        | st.lists(inner, max_size=3)
        | _json
        | st.sampled_from(["#/$defs/a", "date-time", "uri", "string", "object", "array"]),
        max_size=5,
    ),
    max_leaves=12,
)


@settings(max_examples=300)
@given(_schemas)
def test_any_schema_reduces_to_one_googles_types_accept(schema: Any) -> None:
    tool = ToolSpec(name="t", parameters=msgspec.Raw(msgspec.json.encode(schema)))
    body = encode((user(1, "hi"),), tools=(tool,))
    assert sdk_violations(body) == []
    assert gemini_violations(body) == []


# -- properties over histories -------------------------------------------------------


def _kept_signatures(history: tuple[Item, ...]) -> Counter[tuple[str, str]]:
    """The Gemini signatures of the items a request sends, by part kind."""
    kept: Counter[tuple[str, str]] = Counter()
    for entry in repair_history(history):
        if not isinstance(entry, ModelEntry):
            continue
        for item in entry.output:
            signature = getattr(item, "thought_signature", None)
            if signature is None:
                continue
            if isinstance(item, AssistantReasoning) and item.text.strip():
                kept["thought", signature] += 1
            elif isinstance(item, AssistantText):
                kept["text", signature] += 1
            elif isinstance(item, ToolCall):
                kept["call", signature] += 1
    return kept


def _sent_signatures(body: dict[str, Any]) -> Counter[tuple[str, str]]:
    sent: Counter[tuple[str, str]] = Counter()
    for content in body["contents"]:
        for part in content["parts"]:
            signature = part.get("thoughtSignature")
            if signature is None or signature == SKIP_SIGNATURE:
                continue
            kind = "thought" if part.get("thought") else "text" if "text" in part else "call"
            sent[kind, signature] += 1
    return sent


@settings(max_examples=150)
@given(st.one_of(histories(), switching_threads(), switching_threads(last="gemini")), st.booleans())
def test_every_history_builds_a_body_googles_types_accept(
    history: tuple[Item, ...], thinking: bool
) -> None:
    """Against Google's request types (extra fields forbidden, camelCase
    only, the OpenAPI schema subset), and each Gemini rule: calls and
    responses paired, roles alternating, no empty part, every signature
    kept verbatim on a part of its own kind."""
    capabilities = GEMINI_THINKING if thinking else VISION
    for model in ("gemini-2.5-flash", "gemini-3-pro-preview"):
        body = encode(
            history,
            capabilities=capabilities,
            model=model,
            effort="high" if thinking else None,
            context_instructions="ctx",
        )
        assert sdk_violations(body) == []
        assert gemini_violations(body) == []
        assert _sent_signatures(body) == _kept_signatures(history)
