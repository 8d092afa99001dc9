"""Argument repair: valid JSON first, then each fallback in order."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kun.model.arguments import repair_arguments


def repaired(text: str) -> tuple[object, str]:
    result = repair_arguments(text)
    return msgspec.json.decode(result.json), result.method


@pytest.mark.parametrize(
    ("text", "value", "method"),
    [
        ('{"a": 1, "b": [1, 2]}', {"a": 1, "b": [1, 2]}, "none"),
        ('  {"a": "}{"}  ', {"a": "}{"}, "none"),
        ('{"code": "```json\\n{}\\n```"}', {"code": "```json\n{}\n```"}, "none"),
        ('{"s": "x {\\"y\\": 1} z"}', {"s": 'x {"y": 1} z'}, "none"),
        ("", {}, "empty"),
        ("   \n", {}, "empty"),
        ("null", {}, "empty"),
        ('{"t": "a\tb\nc"}', {"t": "a\tb\nc"}, "lenient"),
        ('```json\n{"a": 1}\n```', {"a": 1}, "fence"),
        ('Sure:\n```\n{"a": 1}\n```\nDone.', {"a": 1}, "fence"),
        ('```JSON {"a": 1}```', {"a": 1}, "fence"),
        ('{"a": 1} and then some', {"a": 1}, "object"),
        ('{"a": 1}{"b": 2}', {"a": 1}, "object"),
        ('call it with {"p": "\\\\{"} ok', {"p": "\\{"}, "object"),
        ('use {braces} like {"a": {"b": "}"}}', {"a": {"b": "}"}}, "object"),
        ('[{"a": 1}]', {"a": 1}, "array"),
        ('args: [{"a": 1}] end', {"a": 1}, "object"),
        ('[{"a": 1}, {"b": 2}]', {"__raw": '[{"a": 1}, {"b": 2}]'}, "raw"),
        ('{"a": "trunc', {"__raw": '{"a": "trunc'}, "raw"),
        ('{"a": {"b": 1}, "c": "trunc', {"__raw": '{"a": {"b": 1}, "c": "trunc'}, "raw"),
        ("[1, 2]", {"__raw": "[1, 2]"}, "raw"),
        ('"a string"', {"__raw": '"a string"'}, "raw"),
        ("42", {"__raw": "42"}, "raw"),
        ("no json here", {"__raw": "no json here"}, "raw"),
    ],
)
def test_repair(text: str, value: object, method: str) -> None:
    assert repaired(text) == (value, method)


def test_output_is_compact_json_of_an_object() -> None:
    assert repair_arguments('{ "a" : 1 ,\n "b" : "c" }').json == b'{"a":1,"b":"c"}'


@given(
    st.dictionaries(
        st.text(max_size=8),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=8),
            lambda inner: (
                st.lists(inner, max_size=3)
                | st.dictionaries(st.text(max_size=4), inner, max_size=3)
            ),
            max_leaves=8,
        ),
        max_size=5,
    )
)
def test_valid_objects_are_never_repaired(value: dict[str, object]) -> None:
    text = msgspec.json.encode(value).decode()
    assert repaired(text) == (value, "none")


@given(st.text(max_size=60))
def test_never_raises_and_always_yields_an_object(text: str) -> None:
    value, _ = repaired(text)
    assert isinstance(value, dict)
