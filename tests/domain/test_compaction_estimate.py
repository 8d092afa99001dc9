"""When to compact: the prompt-token estimate, the trigger and its
``[runtime] compact_at`` setting, and the prompt cache between compactions
(requests built from the window share their history byte for byte until the
next compaction)."""

from __future__ import annotations

import itertools

import msgspec
import pytest

from kun.config.errors import ConfigError
from kun.config.load import parse_config
from kun.contracts.items import (
    Approval,
    AssistantText,
    Attachment,
    BlobRef,
    Compaction,
    Item,
    ToolCall,
    ToolResult,
    UserMessage,
)
from kun.contracts.model import ModelRequest, ToolSpec, WireFormat
from kun.domain.compaction import (
    ATTACHMENT_TOKENS,
    MESSAGE_OVERHEAD_TOKENS,
    estimate_request_tokens,
    history_window,
    item_tokens,
    should_compact,
    text_tokens,
)
from tests.model.request.histories import FORMATS
from tests.model.request.test_cache_prefix import codec, encoded


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("", 0),
        ("abcd", 1),
        ("abcde", 2),
        ("x" * 400, 100),
        ("上下文压缩", 5),
        ("héllo", 2),
        ("déjà vu", 3),
    ],
)
def test_text_tokens(text: str, tokens: int) -> None:
    assert text_tokens(text) == tokens


def test_items_cost_their_text_plus_overhead_and_gui_items_nothing() -> None:
    o = MESSAGE_OVERHEAD_TOKENS
    assert item_tokens(UserMessage(id="u", text="x" * 40)) == o + 10
    assert item_tokens(AssistantText(id="a", text="x" * 8)) == o + 2
    call = ToolCall(id="c", call_id="c", name="read", arguments=msgspec.Raw(b'{"path":"a.py"}'))
    assert item_tokens(call) == o + 1 + 3
    assert item_tokens(Approval(id="p")) == 0
    shot = Attachment(name="s.png", mime_type="image/png", size_bytes=10**6)
    text = Attachment(name="a.txt", mime_type="text/plain", size_bytes=4000)
    assert item_tokens(UserMessage(id="u", text="", attachments=(shot, text))) == (
        o + ATTACHMENT_TOKENS + 1000
    )
    spilled = ToolResult(
        id="r", call_id="c", output="head", output_ref=BlobRef(sha256="0", size=400_000)
    )
    assert item_tokens(spilled) == o + 100_000, "a side file counts whole"


def test_a_request_counts_every_part() -> None:
    tool = ToolSpec(name="read", description="x" * 40, parameters=msgspec.Raw(b"x" * 80))
    request = ModelRequest(
        system_prompt="x" * 400,
        context_instructions="x" * 40,
        history=(UserMessage(id="u", text="x" * 4), Compaction(id="c", summary="x" * 8)),
        tools=(tool,),
    )
    o = MESSAGE_OVERHEAD_TOKENS
    assert estimate_request_tokens(request) == (o + 100) + (o + 10) + (o + 1) + (o + 2) + (
        o + 1 + 10 + 20
    )


@pytest.mark.parametrize(
    ("estimate", "window", "at", "compact"),
    [
        (80_000, 100_000, 0.8, False),
        (80_001, 100_000, 0.8, True),
        (50_001, 100_000, 0.5, True),
        (10**9, None, 0.8, False),
        (10**9, 0, 0.8, False),
    ],
)
def test_should_compact_over_the_share_of_a_known_window(
    estimate: int, window: int | None, at: float, compact: bool
) -> None:
    assert should_compact(estimate, window, at) is compact


def test_compact_at_is_a_runtime_setting_between_0_and_1() -> None:
    assert parse_config("[runtime]\ncompact_at = 0.7\n", "kun.toml").runtime.compact_at == 0.7
    assert parse_config("", "kun.toml").runtime.compact_at is None
    for bad in ("0", "1.5", '"high"'):
        with pytest.raises(ConfigError, match="compact_at"):
            parse_config(f"[runtime]\ncompact_at = {bad}\n", "kun.toml")


def _step(n: int) -> list[Item]:
    call_id = f"call_{n}"
    return [
        AssistantText(id=f"a{n}", text=f"Reading file {n}."),
        ToolCall(id=f"c{n}", call_id=call_id, name="read_file", arguments=msgspec.Raw(b"{}")),
        ToolResult(id=f"r{n}", call_id=call_id, name="read_file", output=f"content {n}"),
    ]


@pytest.mark.parametrize("fmt", FORMATS)
def test_requests_between_compactions_share_their_history_byte_for_byte(
    fmt: WireFormat,
) -> None:
    log: list[Item] = [UserMessage(id="u1", text="First task."), *_step(1)]
    log += [UserMessage(id="u2", text="Second task."), *_step(2)]
    log.append(Compaction(id="cmp", summary="Summary: file 1 read.", covers_until="r1"))
    shared = codec(fmt)
    bodies = []
    for n in range(3, 6):
        log += _step(n)
        history = tuple(history_window(log))
        assert history[0].id == "cmp" and history[1].id == "u2"
        request = ModelRequest(system_prompt="You are kun.", history=history)
        bodies.append(encoded(shared, fmt, request))
    for earlier, later in itertools.pairwise(bodies):
        assert later.startswith(earlier.rstrip(b"]}"))
    fresh = codec(fmt)
    assert bodies[-1] == encoded(
        fresh, fmt, ModelRequest(system_prompt="You are kun.", history=history)
    )
