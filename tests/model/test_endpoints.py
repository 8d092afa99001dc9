"""Endpoint URLs: never /v1/v1, custom endpoints by suffix, the probe URL."""

from __future__ import annotations

import pytest

from kun.model.endpoints import (
    EndpointFormat,
    infer_wire_format,
    is_deepseek_host,
    models_probe_url,
    resolve_endpoint,
)
from kun.model.errors import EndpointConfigError


@pytest.mark.parametrize(
    ("base", "fmt", "url"),
    [
        ("https://api.openai.com/v1", "chat_completions", "https://api.openai.com/v1/chat/completions"),
        ("https://api.openai.com/v1/", "responses", "https://api.openai.com/v1/responses"),
        ("https://api.openai.com", "chat_completions", "https://api.openai.com/v1/chat/completions"),
        ("https://api.deepseek.com/beta", "chat_completions", "https://api.deepseek.com/beta/chat/completions"),
        ("https://open.bigmodel.cn/api/paas/v4", "chat_completions", "https://open.bigmodel.cn/api/paas/v4/chat/completions"),
        ("https://generativelanguage.googleapis.com/v1beta/openai", "chat_completions", "https://generativelanguage.googleapis.com/v1beta/openai/chat/completions"),
        ("http://localhost:11434", "chat_completions", "http://localhost:11434/v1/chat/completions"),
        ("https://api.example.test/v2", "responses", "https://api.example.test/v2/responses"),
        ("https://api.anthropic.com", "messages", "https://api.anthropic.com/v1/messages"),
        ("https://api.anthropic.com/v1", "messages", "https://api.anthropic.com/v1/messages"),
        ("https://api.deepseek.com/anthropic", "messages", "https://api.deepseek.com/anthropic/v1/messages"),
        ("https://relay.example.test/beta", "messages", "https://relay.example.test/beta/messages"),
        ("https://api.openai.com/v1/chat/completions", "chat_completions", "https://api.openai.com/v1/chat/completions"),
        ("https://x.openai.azure.com/openai/v1?api-version=preview", "responses", "https://x.openai.azure.com/openai/v1/responses?api-version=preview"),
    ],
)  # fmt: skip
def test_join(base: str, fmt: EndpointFormat, url: str) -> None:
    endpoint = resolve_endpoint(base, fmt)
    assert endpoint.url == url
    assert "/v1/v1" not in endpoint.url
    assert endpoint.wire_format == fmt


@pytest.mark.parametrize(
    ("url", "fmt"),
    [
        ("https://open.bigmodel.cn/api/coding/paas/v4/chat/completions", "chat_completions"),
        ("https://relay.example.test/openai/completions", "chat_completions"),
        ("https://relay.example.test/x/responses/", "responses"),
        ("https://relay.example.test/anthropic/v1/messages", "messages"),
        ("https://relay.example.test/v1/Chat/Completions", "chat_completions"),
    ],
)
def test_custom_endpoint_format_from_suffix(url: str, fmt: str) -> None:
    assert infer_wire_format(url) == fmt
    endpoint = resolve_endpoint(url, "custom_endpoint")
    assert endpoint.url == url
    assert endpoint.wire_format == fmt


@pytest.mark.parametrize(
    "url",
    ["https://relay.example.test/v1/generate", "https://relay.example.test/", "https://r.test"],
)
def test_custom_endpoint_without_a_known_suffix_is_refused(url: str) -> None:
    with pytest.raises(EndpointConfigError) as caught:
        resolve_endpoint(url, "custom_endpoint")
    message = str(caught.value)
    for suffix in ("/chat/completions", "/completions", "/responses", "/messages"):
        assert suffix in message
    assert url in message


@pytest.mark.parametrize("base", ["api.openai.com/v1", "ftp://x.test/v1", "", "https://"])
def test_base_must_be_an_http_url(base: str) -> None:
    with pytest.raises(EndpointConfigError, match="not an http"):
        resolve_endpoint(base, "chat_completions")


@pytest.mark.parametrize(
    "base",
    [
        "https://api.deepseek.com",
        "https://api.deepseek.com/",
        "https://api.deepseek.com/beta",
        "https://api.deepseek.com/v1",
        "https://api.deepseek.com/v3/",
    ],
)
def test_models_probe_strips_beta_and_versions(base: str) -> None:
    assert models_probe_url(base) == "https://api.deepseek.com/v1/models"


def test_deepseek_host() -> None:
    assert is_deepseek_host("https://api.deepseek.com/beta/chat/completions")
    assert is_deepseek_host("https://API.DeepSeek.com/v1")
    assert not is_deepseek_host("https://api.deepseek.com.evil.test/v1")
    assert not is_deepseek_host("https://openrouter.ai/api/v1")
