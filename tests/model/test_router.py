"""Routing across providers, and clients built from the configuration:
one shared httpx.AsyncClient per provider, failures as error chunks."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from contextlib import aclosing

import httpx
import msgspec
import pytest

from kun.config import ConfigError, parse_config
from kun.contracts.model import CompletedChunk, ErrorChunk, ModelRequest, ModelStreamChunk
from kun.model.client import HttpModelClient
from kun.model.factory import build_router
from kun.model.port import ModelClient
from kun.model.router import MultiProviderClient, UnknownProvider
from tests.model.fake_http import REQUEST
from tests.model.support import fixture

pytestmark = pytest.mark.anyio

SSE = {"content-type": "text/event-stream"}
ANSWERS = {
    "/chat/completions": "cc_plain_text.sse",
    "/messages": "msg_text.sse",
    "/responses": "resp_text.sse",
}
KEYS = {
    "OPENAI_API_KEY": "sk-openai-secret-0001",
    "ANTHROPIC_API_KEY": "sk-ant-secret-0002",
    "DEEPSEEK_API_KEY": "sk-deepseek-secret-0003",
}
CONFIG = """
default_provider = "openai"

[providers.openai]
[providers.openai.models."gpt-4.1"]
max_tokens = 1234

[providers.anthropic]

[providers.deepseek]
[providers.deepseek.retry]
max_attempts = 1

[providers.relay]
catalog = "openai"
base_url = "https://relay.example.test/api/v3/chat/completions"
endpoint_format = "custom_endpoint"
api_key_env = "RELAY_KEY"
default_model = "gpt-5"
"""


class Provider:
    """Every provider at once: answers by path, records what was asked."""

    def __init__(self, status: int = 200) -> None:
        self.status = status
        self.requests: list[httpx.Request] = []

    def handler(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if self.status != 200:
            return httpx.Response(self.status, json={"error": {"message": "unavailable"}})
        name = next(f for end, f in ANSWERS.items() if request.url.path.endswith(end))
        return httpx.Response(200, headers=SSE, content=fixture(name))

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self.handler)

    @property
    def bodies(self) -> list[dict[str, object]]:
        return [msgspec.json.decode(r.content) for r in self.requests]


@pytest.fixture
def provider() -> Provider:
    return Provider()


@pytest.fixture
async def router(provider: Provider) -> AsyncIterator[MultiProviderClient]:
    config = parse_config(CONFIG, "kun.toml")
    async with build_router(config, environ=KEYS, transport=provider.transport()) as built:
        yield built


async def collect(client: ModelClient, request: ModelRequest = REQUEST) -> list[ModelStreamChunk]:
    async with aclosing(client.stream(request)) as chunks:  # type: ignore[type-var]
        return [chunk async for chunk in chunks]


def http_of(client: ModelClient) -> httpx.AsyncClient:
    assert isinstance(client, HttpModelClient)
    return client.http


def routed(provider_id: str | None) -> ModelRequest:
    return msgspec.structs.replace(REQUEST, provider_id=provider_id)


async def test_a_request_without_provider_goes_to_the_default(
    router: MultiProviderClient, provider: Provider
) -> None:
    chunks = await collect(router)
    assert isinstance(chunks[-1], CompletedChunk)
    assert str(provider.requests[0].url) == "https://api.openai.com/v1/chat/completions"
    assert provider.bodies[0]["model"] == "gpt-4.1"
    assert (router.provider, router.model) == ("openai", "gpt-4.1")


async def test_a_request_goes_to_the_provider_it_names(
    router: MultiProviderClient, provider: Provider
) -> None:
    chunks = await collect(router, routed("anthropic"))
    assert isinstance(chunks[-1], CompletedChunk)
    sent = provider.requests[0]
    assert str(sent.url) == "https://api.anthropic.com/v1/messages"
    assert sent.headers["x-api-key"] == KEYS["ANTHROPIC_API_KEY"]
    assert provider.bodies[0]["model"] == "claude-sonnet-4-5"


async def test_provider_slash_model_picks_the_model(
    router: MultiProviderClient, provider: Provider
) -> None:
    await collect(router, routed("deepseek/deepseek-reasoner"))
    assert str(provider.requests[0].url) == "https://api.deepseek.com/v1/chat/completions"
    assert provider.bodies[0]["model"] == "deepseek-reasoner"


async def test_an_openai_reasoning_model_goes_to_the_responses_api(
    router: MultiProviderClient, provider: Provider
) -> None:
    assert router.capabilities("openai/gpt-5").endpoint_format == "responses"
    chunks = await collect(router, routed("openai/gpt-5"))
    assert isinstance(chunks[-1], CompletedChunk)
    assert str(provider.requests[0].url) == "https://api.openai.com/v1/responses"


async def test_a_custom_endpoint_keeps_its_format_whatever_the_model(provider: Provider) -> None:
    environ = {**KEYS, "RELAY_KEY": "sk-relay-0004"}
    config = parse_config(CONFIG, "kun.toml")
    async with build_router(config, environ=environ, transport=provider.transport()) as built:
        relay = built.select("relay")
        assert isinstance(relay, HttpModelClient)
        assert relay.wire_format == "chat_completions"
        await collect(built, routed("relay"))
    assert str(provider.requests[0].url) == "https://relay.example.test/api/v3/chat/completions"


async def test_max_tokens_of_the_model_table_is_sent(
    router: MultiProviderClient, provider: Provider
) -> None:
    await collect(router)
    assert provider.bodies[0]["max_tokens"] == 1234


async def test_an_unknown_provider_is_an_error_chunk_listing_the_configured(
    router: MultiProviderClient, provider: Provider
) -> None:
    chunks = await collect(router, routed("azure/gpt-4o"))
    assert len(chunks) == 1
    error = chunks[0]
    assert isinstance(error, ErrorChunk)
    assert error.code == "unknown_provider"
    assert "'azure'" in error.message
    assert "openai, anthropic, deepseek, relay" in error.message
    assert provider.requests == []
    with pytest.raises(UnknownProvider):
        router.select("azure")


async def test_a_provider_without_its_key_is_an_error_chunk_naming_the_variable(
    router: MultiProviderClient, provider: Provider
) -> None:
    chunks = await collect(router, routed("relay"))
    assert len(chunks) == 1
    error = chunks[0]
    assert isinstance(error, ErrorChunk)
    assert error.code == "provider_unavailable"
    assert "providers.relay.api_key_env" in error.message
    assert "RELAY_KEY" in error.message
    assert provider.requests == []


def test_a_missing_key_of_the_default_provider_fails_the_build() -> None:
    config = parse_config(CONFIG, "/home/me/kun.toml")
    environ = {k: v for k, v in KEYS.items() if k != "OPENAI_API_KEY"}
    with pytest.raises(ConfigError) as caught:
        build_router(config, environ=environ, transport=Provider().transport())
    assert caught.value.file == "/home/me/kun.toml"
    assert caught.value.key == "providers.openai"  # its name implies the variable
    assert "OPENAI_API_KEY" in str(caught.value)


def test_no_provider_at_all_is_a_clear_mistake() -> None:
    with pytest.raises(ConfigError, match="no model provider is configured: set one of OPENAI"):
        build_router(parse_config("", "kun.toml"), environ={})


def test_a_custom_endpoint_that_names_no_format_is_a_config_error() -> None:
    text = (
        '[providers.relay]\nbase_url = "https://relay.test/v1/generate"\n'
        'endpoint_format = "custom_endpoint"\ndefault_model = "m"'
    )
    with pytest.raises(ConfigError) as caught:
        build_router(parse_config(text, "kun.toml"), environ={}, transport=Provider().transport())
    assert caught.value.key == "providers.relay.base_url"
    assert "/chat/completions" in caught.value.expected


async def test_one_shared_async_client_per_provider(router: MultiProviderClient) -> None:
    openai = http_of(router.select("openai"))
    assert http_of(router.select("openai/gpt-4.1")) is openai
    assert http_of(router.select("openai/gpt-5")) is openai
    assert http_of(router.with_thinking("high").select("openai")) is openai
    assert http_of(router.select("openai").with_max_completion_tokens(10)) is openai
    anthropic = http_of(router.select("anthropic"))
    deepseek = http_of(router.select("deepseek"))
    assert len({id(openai), id(anthropic), id(deepseek)}) == 3


async def test_clients_are_built_once_per_model(router: MultiProviderClient) -> None:
    assert router.select("anthropic") is router.select("anthropic/claude-sonnet-4-5")


async def test_router_clones_pass_their_settings_to_the_clients(
    router: MultiProviderClient, provider: Provider
) -> None:
    thinking = router.with_thinking("high").with_max_completion_tokens(77)
    selected = thinking.select("anthropic")
    assert isinstance(selected, HttpModelClient)
    assert (selected.thinking, selected.max_completion_tokens) == ("high", 77)
    plain = router.select("anthropic")
    assert isinstance(plain, HttpModelClient)
    assert (plain.thinking, plain.max_completion_tokens) == (None, None)
    await collect(thinking, routed("deepseek"))
    assert provider.bodies[0]["max_tokens"] == 77


async def test_retry_settings_reach_the_client(provider: Provider) -> None:
    failing = Provider(status=503)
    config = parse_config(CONFIG, "kun.toml")
    async with build_router(config, environ=KEYS, transport=failing.transport()) as built:
        chunks = await collect(built, routed("deepseek"))
    assert isinstance(chunks[-1], ErrorChunk)
    assert [r.method for r in failing.requests] == ["POST", "GET"]  # the DeepSeek probe


async def test_closing_the_router_closes_every_shared_client(provider: Provider) -> None:
    config = parse_config(CONFIG, "kun.toml")
    built = build_router(config, environ=KEYS, transport=provider.transport())
    shared = [http_of(built.select(name)) for name in ("openai", "anthropic")]
    await built.with_thinking("low").aclose()
    assert all(http.is_closed for http in shared)


async def test_no_key_in_any_repr(router: MultiProviderClient) -> None:
    config = parse_config(CONFIG, "kun.toml")
    shown = [repr(config), repr(router), repr(router.select("anthropic"))]
    shown += [repr(router.select(name)) for name in ("openai", "deepseek")]
    for text in shown:
        for key in KEYS.values():
            assert key not in text


async def test_a_configured_proxy_carries_the_requests_and_is_named_on_failure() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    text = (
        "[providers.local]\n"
        'base_url = "http://model.invalid/v1"\n'
        'default_model = "m"\n'
        f'proxy = "http://user:pw-123456@127.0.0.1:{port}"\n'
        "[providers.local.retry]\nmax_attempts = 1\n"
    )
    async with build_router(parse_config(text, "kun.toml"), environ={}) as built:
        chunks = await collect(built)
    error = chunks[-1]
    assert isinstance(error, ErrorChunk)
    assert error.code == "connection_refused"
    assert f"nothing is listening at the proxy http://user:[redacted]@127.0.0.1:{port}" in (
        error.message
    )


async def test_the_models_capabilities_reach_its_request_codec(
    router: MultiProviderClient, provider: Provider
) -> None:
    thinking = router.with_thinking("high")
    for provider_id in ("openai", "openai/gpt-5", "anthropic", "anthropic/claude-3-5-haiku-latest"):
        await collect(thinking, routed(provider_id))
    gpt_41, gpt_5, sonnet, haiku = provider.bodies
    assert "reasoning_effort" not in gpt_41 and "reasoning" not in gpt_41
    assert gpt_5["reasoning"] == {"effort": "high"}
    assert "thinking" in sonnet
    assert "thinking" not in haiku


def test_an_unknown_provider_says_how_to_go_on_with_a_configured_one() -> None:
    """An imported thread names the provider it ran on elsewhere: the error
    says how to continue it here, not only what is missing."""
    from kun.model.router import UnknownProvider

    message = str(UnknownProvider("anthropic", ["fake"]))
    assert message.startswith("no provider named 'anthropic' is configured (configured: fake)")
    assert "--provider NAME --model MODEL" in message and "PATCH" in message
