"""The Kimi (Moonshot) dialect of chat completions: byte-exact bodies for
each of its rules, and the rules as properties (:mod:`.rules`)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kun.contracts.capabilities import ModelCapabilities
from kun.contracts.items import Item
from kun.contracts.model import ModelRequest, ToolSpec
from kun.model.body import encode_body
from kun.model.capabilities import capabilities
from kun.model.request.kimi_schema import kimi_parameters, normalize_kimi_schema
from kun.model.request_codec import ChatCompletionsCodec, RequestCodec, codec_for
from kun.tools.builtin.web_search import SPEC as WEB_SEARCH
from tests.properties.request_strategies import switching_threads

from .histories import TEXT_ONLY, call, load, result, say, think, user
from .rules import kimi_schema_violations, kimi_violations

MOONSHOT = "https://api.moonshot.ai/v1/chat/completions"
K26 = capabilities("moonshotai", "kimi-k2.6")
K2_PLAIN = capabilities("moonshotai", "kimi-k2-0905-preview")

ENUM_ONLY = ToolSpec(
    name="set_mode",
    description="Set the mode.",
    parameters=msgspec.Raw(
        b'{"type":"object","$defs":{"Mode":{"enum":["fast","slow"]}},'
        b'"properties":{"mode":{"$ref":"#/$defs/Mode","description":"How."},"n":{"minimum":1}},'
        b'"required":["mode","ghost"]}'
    ),
)
PLAIN = ToolSpec(
    name="read_file",
    description="Read a file.",
    parameters=msgspec.Raw(b'{"type":"object","properties":{"path":{"type":"string"}}}'),
)


def kimi(caps: ModelCapabilities = K26, url: str = MOONSHOT, **fields: Any) -> RequestCodec:
    return codec_for("chat_completions", capabilities=caps, endpoint_url=url, **fields)


def body_bytes(
    codec: RequestCodec, history: tuple[Item, ...], effort: str | None = None, **fields: Any
) -> bytes:
    request = ModelRequest(history=history, **fields)
    encoded = encode_body(
        codec, request, model="kimi-k2.6", stream=True, max_tokens=None, reasoning_effort=effort
    )
    return encoded.join()


def body(codec: RequestCodec, history: tuple[Item, ...], **fields: Any) -> dict[str, Any]:
    decoded: dict[str, Any] = msgspec.json.decode(body_bytes(codec, history, **fields))
    return decoded


# -- byte-exact bodies, one per rule -------------------------------------------------


def test_tool_schemas_are_normalized_and_builtins_go_by_name() -> None:
    sent = body_bytes(kimi(), (user(1, "hi"),), tools=(ENUM_ONLY, PLAIN, WEB_SEARCH))
    assert sent == (
        b'{"model":"kimi-k2.6","stream":true,"stream_options":{"include_usage":true},'
        b'"tools":[{"type":"function","function":{"name":"set_mode","description":"Set the mode.",'
        b'"parameters":{"type":"object","properties":{"mode":{"enum":["fast","slow"],'
        b'"description":"How.","type":"string"},"n":{"minimum":1,"type":"number"}},'
        b'"required":["mode"]}}},'
        b'{"type":"function","function":{"name":"read_file","description":"Read a file.",'
        b'"parameters":{"type":"object","properties":{"path":{"type":"string"}}}}},'
        b'{"type":"builtin_function","function":{"name":"$web_search"}}],'
        b'"messages":[{"role":"user","content":"hi"}]}'
    )


def test_a_schema_that_needs_nothing_keeps_its_bytes() -> None:
    assert kimi_parameters(PLAIN.parameters) is PLAIN.parameters


def test_thinking_is_a_type_toggle() -> None:
    on = body_bytes(kimi(), (user(1, "hi"),), effort="high")
    off = body_bytes(kimi(), (user(1, "hi"),), effort="off")
    head = b'{"model":"kimi-k2.6","stream":true,"stream_options":{"include_usage":true},'
    tail = b'"messages":[{"role":"user","content":"hi"}]}'
    assert on == head + b'"thinking":{"type":"enabled"},' + tail
    assert off == head + b'"thinking":{"type":"disabled"},' + tail


def test_reasoning_goes_back_and_tool_results_carry_their_name() -> None:
    history = (
        user(1, "Read it."),
        think(1, "I should read the file."),
        call("functions.read_file:0"),
        result("functions.read_file:0", "hello"),
        say(2, "It says hello."),
        user(3, "Thanks."),
    )
    assert body_bytes(kimi(), history) == (
        b'{"model":"kimi-k2.6","stream":true,"stream_options":{"include_usage":true},'
        b'"messages":[{"role":"user","content":"Read it."},'
        b'{"role":"assistant","content":"","reasoning_content":"I should read the file.",'
        b'"tool_calls":[{"id":"functions.read_file:0","type":"function",'
        b'"function":{"name":"read_file","arguments":"{\\"path\\":\\"README.md\\"}"}}]},'
        b'{"role":"tool","tool_call_id":"functions.read_file:0","name":"read_file",'
        b'"content":"hello"},'
        b'{"role":"assistant","content":"It says hello.","reasoning_content":" "},'
        b'{"role":"user","content":"Thanks."}]}'
    )


def test_a_model_that_does_not_think_gets_reasoning_only_where_recorded() -> None:
    history = (
        user(1, "Read it."),
        think(1, "Reading."),
        call("c1"),
        result("c1", "hello"),
        call("c2"),
        result("c2", "again"),
        user(3, "Thanks."),
    )
    messages = body(kimi(K2_PLAIN), history)["messages"]
    assert messages[1]["reasoning_content"] == "Reading."
    assert "reasoning_content" not in messages[3]


def test_a_trailing_assistant_answer_is_a_partial_prefill() -> None:
    history = (user(1, "Write a poem."), say(2, "Roses are red,"))
    assert body_bytes(kimi(K2_PLAIN), history) == (
        b'{"model":"kimi-k2.6","stream":true,"stream_options":{"include_usage":true},'
        b'"messages":[{"role":"user","content":"Write a poem."},'
        b'{"role":"assistant","content":"Roses are red,","partial":true}]}'
    )


def test_only_the_last_message_is_partial_as_the_history_grows() -> None:
    codec = kimi(K2_PLAIN)
    first = (user(1, "Write a poem."), say(2, "Roses are red,"))
    body_bytes(codec, first)
    grown = body(codec, (*first, user(3, "Go on.")))["messages"]
    assert grown[1] == {"role": "assistant", "content": "Roses are red,"}


def test_a_web_search_call_keeps_its_name_and_echo() -> None:
    arguments = b'{"search_result":{"search_id":"s-1"},"usage":{"total_tokens":42}}'
    history = (
        user(1, "News?"),
        call("ws-1", name="$web_search", search_result={"search_id": "s-1"}),
        result("ws-1", arguments.decode(), name="$web_search"),
    )
    sent = body_bytes(kimi(K2_PLAIN), history)
    assert b'"function":{"name":"$web_search","arguments":' in sent
    assert b'{"role":"tool","tool_call_id":"ws-1","name":"$web_search","content":' in sent


def test_other_dialects_never_see_the_builtin() -> None:
    history = (
        user(1, "News?"),
        call("ws-1", name="$web_search"),
        result("ws-1", "{}", name="$web_search"),
    )
    for fmt in ("chat_completions", "responses", "messages"):
        codec = codec_for(fmt, capabilities=TEXT_ONLY, load_attachment=load)
        request = ModelRequest(history=history, tools=(PLAIN, WEB_SEARCH))
        sent = encode_body(
            codec, request, model="m", stream=True, max_tokens=None, reasoning_effort=None
        ).join()
        assert b"$web_search" not in sent, fmt


@pytest.mark.parametrize(
    ("url", "dialect", "expected"),
    [
        ("https://api.moonshot.ai/v1/chat/completions", None, True),
        ("https://api.moonshot.cn/v1/chat/completions", None, True),
        ("https://api.kimi.com/coding/v1/chat/completions", None, True),
        ("https://relay.example/v1/chat/completions", None, False),
        ("https://relay.example/v1/chat/completions", "kimi", True),
        ("https://api.deepseek.com/chat/completions", None, False),
    ],
)
def test_the_dialect_is_recognised_by_host_or_setting(
    url: str, dialect: str | None, expected: bool
) -> None:
    codec = kimi(url=url, dialect=dialect)
    assert isinstance(codec, ChatCompletionsCodec)
    assert codec.kimi is expected


def test_the_catalogue_makes_kimis_thinking_models_send_reasoning_back() -> None:
    assert K26.reasoning_protocol == "kimi"
    assert K26.reasoning_history == "required"
    assert capabilities("moonshotai-cn", "kimi-k2-thinking").reasoning_protocol == "kimi"
    assert K2_PLAIN.reasoning_protocol == "none"


# -- schema normalization, example by example ---------------------------------------


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({}, {"type": "object"}),
        (
            {"type": "object", "properties": {"v": {"enum": [1, 2.5]}}},
            {"type": "object", "properties": {"v": {"enum": [1, 2.5], "type": "number"}}},
        ),
        (
            {"type": "object", "properties": {"v": {"enum": ["a", 1]}}},
            {
                "type": "object",
                "properties": {
                    "v": {
                        "anyOf": [
                            {"type": "integer", "enum": [1]},
                            {"type": "string", "enum": ["a"]},
                        ]
                    }
                },
            },
        ),
        (
            {
                "type": "object",
                "properties": {"v": {"type": "string", "anyOf": [{}, {"minLength": 1}]}},
            },
            {
                "type": "object",
                "properties": {
                    "v": {"anyOf": [{"type": "string"}, {"minLength": 1, "type": "string"}]}
                },
            },
        ),
        (
            {"properties": {"v": {"items": {"const": True}}}},
            {
                "properties": {"v": {"items": {"const": True, "type": "boolean"}, "type": "array"}},
                "type": "object",
            },
        ),
        (
            {"properties": {"v": {"$ref": "https://example.com/s.json"}}},
            {"properties": {"v": {"$ref": "https://example.com/s.json"}}, "type": "object"},
        ),
        (
            {
                "definitions": {"a/b": {"format": "uri"}},
                "properties": {"v": {"$ref": "#/definitions/a~1b"}},
            },
            {"properties": {"v": {"format": "uri", "type": "string"}}, "type": "object"},
        ),
    ],
)
def test_normalization_examples(schema: dict[str, Any], expected: dict[str, Any]) -> None:
    before = msgspec.json.encode(schema)
    assert normalize_kimi_schema(schema) == expected
    assert msgspec.json.encode(schema) == before


def test_a_cycle_stays_a_ref_and_keeps_its_definitions() -> None:
    schema = {
        "type": "object",
        "$defs": {"Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}}},
        "properties": {"root": {"$ref": "#/$defs/Node"}},
    }
    normalized = normalize_kimi_schema(schema)
    assert normalized["properties"]["root"] == {
        "type": "object",
        "properties": {"next": {"$ref": "#/$defs/Node"}},
    }
    assert "$defs" in normalized
    assert kimi_schema_violations(normalized) == []


# -- the rules as properties --------------------------------------------------------

_NAMES = st.sampled_from(["a", "b", "c", "path", "mode"])
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.floats(-2, 2, allow_nan=False),
    st.text(max_size=3),
)
_DEFS = ("A", "B")


def _node(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    keywords: dict[str, st.SearchStrategy[Any]] = {
        "type": st.sampled_from(["string", "integer", "number", "boolean", "object", "array"]),
        "enum": st.lists(_SCALARS, min_size=1, max_size=3),
        "const": _SCALARS,
        "description": st.just("d"),
        "pattern": st.just("^x"),
        "minimum": st.just(0),
        "properties": st.dictionaries(_NAMES, children, max_size=3),
        "required": st.lists(_NAMES, max_size=3, unique=True),
        "items": children,
        "anyOf": st.lists(children, min_size=1, max_size=3),
        "oneOf": st.lists(children, min_size=1, max_size=2),
        "allOf": st.lists(children, min_size=1, max_size=2),
        "additionalProperties": st.one_of(st.booleans(), children),
        "$ref": st.sampled_from([f"#/$defs/{name}" for name in _DEFS] + ["#/$defs/missing"]),
    }
    return st.dictionaries(st.sampled_from(sorted(keywords)), st.none(), max_size=4).flatmap(
        lambda picked: st.fixed_dictionaries({key: keywords[key] for key in picked})
    )


_LEAF: st.SearchStrategy[dict[str, Any]] = st.fixed_dictionaries({})
SCHEMA_NODES = st.recursive(_LEAF, _node, max_leaves=12)


@st.composite
def tool_schemas(draw: st.DrawFn) -> dict[str, Any]:
    """A random parameters schema: an object (said or not) with random
    properties, and ``$defs`` whose refs never loop (``B`` may refer to
    ``A``, ``A`` to nothing)."""
    a = draw(SCHEMA_NODES.filter(lambda node: b"$ref" not in msgspec.json.encode(node)))
    b = draw(SCHEMA_NODES.filter(lambda node: b"#/$defs/B" not in msgspec.json.encode(node)))
    drawn = draw(SCHEMA_NODES)
    dropped = ("anyOf", "oneOf", "$ref", "type", "enum", "const", "items")
    root = {key: value for key, value in drawn.items() if key not in dropped}
    if draw(st.booleans()):
        root["type"] = "object"
    root["properties"] = draw(st.dictionaries(_NAMES, SCHEMA_NODES, max_size=3))
    if draw(st.booleans()):
        root["$defs"] = {"A": a, "B": b}
    return root


@settings(max_examples=300, deadline=None)
@given(tool_schemas())
def test_every_normalized_schema_is_one_kimi_accepts(schema: dict[str, Any]) -> None:
    normalized = normalize_kimi_schema(schema)
    assert kimi_schema_violations(normalized) == []
    assert normalize_kimi_schema(normalized) == normalized


@settings(max_examples=150, deadline=None)
@given(switching_threads())
def test_a_thinking_models_history_keeps_reasoning_on_every_tool_call(
    history: tuple[Item, ...],
) -> None:
    codec = kimi()
    tools = (ENUM_ONLY, PLAIN, WEB_SEARCH)
    sent = body(codec, history, effort="on", tools=tools)
    assert kimi_violations(sent, thinking_model=True) == []
    whole = codec.encode(
        ModelRequest(history=history, tools=tools),
        model="kimi-k2.6",
        stream=True,
        max_tokens=None,
        reasoning_effort="on",
    )
    assert msgspec.json.decode(msgspec.json.encode(whole)) == sent


@settings(max_examples=100, deadline=None)
@given(switching_threads())
def test_a_model_that_does_not_think_keeps_chat_rules_too(history: tuple[Item, ...]) -> None:
    sent = body(kimi(K2_PLAIN), history, tools=(PLAIN,))
    assert kimi_violations(sent) == []
