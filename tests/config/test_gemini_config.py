"""Gemini in ``kun.toml``: the format inferred from Google's hosts, Vertex
AI's project and location, the ``google`` provider known by its key."""

from __future__ import annotations

import httpx
import msgspec
import pytest

from kun.config import ConfigError, infer_config, parse_config
from kun.contracts.model import CompletedChunk, ModelRequest, TextDeltaChunk
from kun.model.capabilities import capabilities
from kun.model.factory import build_router
from kun.testing.wire import render_stream


def test_a_google_base_url_means_the_gemini_format() -> None:
    config = parse_config(
        '[providers.g]\nbase_url = "https://generativelanguage.googleapis.com/v1beta"\n'
        'api_key_env = "MY_GEMINI_KEY"\ndefault_model = "gemini-2.5-pro"\n',
        "kun.toml",
    )
    assert config.providers["g"].endpoint_format == "gemini"
    assert config.providers["g"].vertex is None


def test_the_google_provider_is_known_by_its_key() -> None:
    provider = parse_config("[providers.google]\n", "kun.toml").providers["google"]
    assert (provider.endpoint_format, provider.api_key_env) == ("gemini", "GEMINI_API_KEY")
    assert provider.base_url == "https://generativelanguage.googleapis.com/v1beta"
    inferred = infer_config({"GEMINI_API_KEY": "k"})
    assert inferred.default_provider == "google"
    assert inferred.providers["google"].default_model == "gemini-2.5-flash"


def test_vertex_project_and_location() -> None:
    provider = parse_config(
        '[providers.vertex]\nvertex_project = "my-proj"\nvertex_location = "europe-west4"\n'
        'api_key_env = "VERTEX_TOKEN"\ncatalog = "google-vertex"\n'
        'default_model = "gemini-2.5-flash"\n',
        "kun.toml",
    ).providers["vertex"]
    assert provider.endpoint_format == "gemini"
    assert provider.base_url == "https://europe-west4-aiplatform.googleapis.com"
    assert provider.vertex == ("my-proj", "europe-west4")
    default = parse_config(
        '[providers.v]\nvertex_project = "p-1"\napi_key_env = "T"\ndefault_model = "m"\n',
        "kun.toml",
    ).providers["v"]
    assert default.vertex == ("p-1", "global")
    assert default.base_url == "https://aiplatform.googleapis.com"


@pytest.mark.parametrize(
    ("text", "key", "expected"),
    [
        ('vertex_project = "p-1"\ndefault_model = "m"\n', "api_key_env", "expected the variable"),
        ('vertex_location = "us-east1"\napi_key_env = "T"\nbase_url = "https://x.example"\n'
         'default_model = "m"\n', "vertex_location", "expected vertex_project too"),
        ('vertex_project = "p-1"\napi_key_env = "T"\nendpoint_format = "messages"\n'
         'default_model = "m"\n', "endpoint_format", 'expected "gemini"'),
        ('vertex_project = "Bad/Project"\napi_key_env = "T"\ndefault_model = "m"\n',
         "vertex_project", "expected"),
    ],
)  # fmt: skip
def test_vertex_mistakes_are_named(text: str, key: str, expected: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(f"[providers.v]\n{text}", "kun.toml")
    assert caught.value.key == f"providers.v.{key}"
    assert expected in str(caught.value)


def test_google_models_think_the_gemini_way() -> None:
    assert capabilities("google", "gemini-2.5-flash").reasoning_protocol == "gemini-thinking"
    assert capabilities("google-vertex", "gemini-2.5-pro").reasoning_protocol == "gemini-thinking"
    assert capabilities("google", "gemini-2.5-flash").endpoint_format is None


@pytest.mark.anyio
async def test_a_vertex_provider_sends_a_bearer_token_to_its_project() -> None:
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        body = render_stream("gemini", [TextDeltaChunk(text="hi"), CompletedChunk()])
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    config = parse_config(
        '[providers.vertex]\nvertex_project = "my-proj"\nvertex_location = "us-central1"\n'
        'api_key_env = "VERTEX_TOKEN"\ncatalog = "google-vertex"\n'
        'default_model = "gemini-2.5-flash"\n',
        "kun.toml",
    )
    router = build_router(
        config, environ={"VERTEX_TOKEN": "ya29.token"}, transport=httpx.MockTransport(answer)
    )
    try:
        chunks = [c async for c in router.stream(ModelRequest(system_prompt="s"))]
    finally:
        await router.aclose()
    assert isinstance(chunks[-1], CompletedChunk)
    (request,) = seen
    assert str(request.url) == (
        "https://us-central1-aiplatform.googleapis.com/v1/projects/my-proj/locations/"
        "us-central1/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    )
    assert request.headers["authorization"] == "Bearer ya29.token"
    assert "systemInstruction" in msgspec.json.decode(request.content)
