"""The cache argument of SPEC §8.3, measured: consecutive requests of one turn
share a byte-identical prefix that reaches the end of the earlier history.

Only the context instructions change between the steps (they always do:
todos, goal state) and they come after the history. For Anthropic the
``cache_control`` markers are taken out before comparing: they move to the
newest messages every step, and the provider matches cached prefixes on the
content, not on the markers.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from kun.contracts.items import Item
from kun.contracts.model import ModelRequest, WireFormat
from kun.model.request_codec import RequestCodec

from .histories import (
    CASES,
    CLAUDE_THINKING,
    FORMATS,
    MODEL,
    TOOLS,
    Case,
    call,
    result,
    say,
    think,
)
from .histories import user as user_message

STEPS: list[tuple[Item, ...]] = [
    (user_message(1, "Fix the failing test."),),
    (
        think(1, "The test names the bug.", signature="sig-1"),
        say(1, "Reading the test."),
        call("call_1", path="tests/test_app.py"),
    ),
    (result("call_1", "def test_x(): ..."),),
    (call("call_2", path="src/app.py"), call("call_3", "grep", pattern="x(")),
    (result("call_3", "src/app.py:3"), result("call_2", "def x(): ...")),
    (call("call_4", "edit_file", path="src/app.py"),),
    (result("call_4", "edited"),),
]


def request_at(step: int, *, context: bool = True) -> ModelRequest:
    """The request of model step ``step``: the history so far (ending with
    results, as the loop sends it), and context instructions of that step."""
    history = tuple(item for items in STEPS[: 2 * step + 1] for item in items)
    return ModelRequest(
        system_prompt="You are kun.",
        persona="Be brief.",
        history=history,
        context_instructions=f"<todos step={step}>" if context else None,
        tools=TOOLS,
    )


def encoded(codec: RequestCodec, fmt: WireFormat, request: ModelRequest) -> bytes:
    body = codec.encode(
        request, model=MODEL[fmt], stream=True, max_tokens=None, reasoning_effort="high"
    )
    return msgspec.json.encode(_unmarked(body))


def _unmarked(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _unmarked(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_unmarked(v) for v in value]
    return value


def history_bytes(codec: RequestCodec, fmt: WireFormat, step: int) -> bytes:
    """The body of step ``step`` up to the last byte of its history."""
    return encoded(codec, fmt, request_at(step, context=False)).rstrip(b"]}")


def codec(fmt: WireFormat) -> RequestCodec:
    return Case(history=(), capabilities={"messages": CLAUDE_THINKING}).codec(fmt)


@pytest.mark.parametrize("fmt", FORMATS)
def test_consecutive_requests_share_the_earlier_history_byte_for_byte(fmt: WireFormat) -> None:
    shared = codec(fmt)
    steps = len(STEPS) // 2
    bodies = [encoded(shared, fmt, request_at(step)) for step in range(steps + 1)]
    if fmt == "messages":
        assert all(b'"budget_tokens"' in body for body in bodies), "thinking stays on"
    for step in range(steps):
        earlier, later = bodies[step], bodies[step + 1]
        history = history_bytes(codec(fmt), fmt, step)
        assert earlier.startswith(history)
        assert later.startswith(history), f"step {step + 1} rewrote the history of step {step}"
        common = len(_common_prefix(earlier, later))
        assert common >= len(history)
        assert common < len(earlier), "the context instructions must differ"


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_projection_cache_never_changes_a_body(fmt: WireFormat) -> None:
    shared = codec(fmt)
    for step in (0, 1, 2, 3, 1, 0, 3):
        assert encoded(shared, fmt, request_at(step)) == encoded(codec(fmt), fmt, request_at(step))
    for case in CASES.values():
        request = case.request()
        warm = case.codec(fmt)
        warm.encode(request, model="m", stream=False, max_tokens=None, reasoning_effort=None)
        again = warm.encode(
            request, model="m", stream=False, max_tokens=None, reasoning_effort=None
        )
        fresh = case.codec(fmt).encode(
            request, model="m", stream=False, max_tokens=None, reasoning_effort=None
        )
        assert msgspec.json.encode(again) == msgspec.json.encode(fresh)


def test_a_rewound_history_is_projected_afresh() -> None:
    shared = codec("chat_completions")
    long = request_at(3)
    short = request_at(1)
    edited = ModelRequest(history=(*short.history[:-1], result("call_1", "changed")))
    for request in (long, short, edited, long):
        assert encoded(shared, "chat_completions", request) == encoded(
            codec("chat_completions"), "chat_completions", request
        )


def _common_prefix(a: bytes, b: bytes) -> bytes:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return a[:n]
