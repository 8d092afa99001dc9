"""Kimi (Moonshot) in kun.toml: the known provider, the dialect setting,
and ``web_search``, which only the Kimi dialect can serve."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kun.config import ConfigError, infer_config, parse_config
from kun.model.factory import ProviderClients, build_router
from kun.model.request.chat_completions import ChatCompletionsCodec

KEYS = {"MOONSHOT_API_KEY": "sk-moonshot-test"}


def test_the_key_alone_sets_up_moonshot() -> None:
    config = infer_config(KEYS)
    kimi = config.providers["moonshotai"]
    assert (kimi.base_url, kimi.endpoint_format, kimi.default_model, kimi.catalog) == (
        "https://api.moonshot.ai/v1",
        "chat_completions",
        "kimi-k2.6",
        "moonshotai",
    )
    assert config.default_provider == "moonshotai"


def test_the_china_host_is_one_base_url_away() -> None:
    config = infer_config({**KEYS, "MOONSHOT_BASE_URL": "https://api.moonshot.cn/v1"})
    assert config.providers["moonshotai"].base_url == "https://api.moonshot.cn/v1"


def test_a_provider_named_anything_borrows_moonshots_defaults_by_catalog() -> None:
    config = parse_config('[providers.kimi]\ncatalog = "moonshotai"\nweb_search = true\n', "k")
    kimi = config.providers["kimi"]
    assert (kimi.base_url, kimi.api_key_env, kimi.web_search, kimi.dialect) == (
        "https://api.moonshot.ai/v1",
        "MOONSHOT_API_KEY",
        True,
        None,
    )


def test_a_relay_says_its_dialect() -> None:
    config = parse_config(
        '[providers.relay]\nbase_url = "https://relay.example/v1"\ndialect = "kimi"\n'
        'default_model = "kimi-k2.6"\ncatalog = "moonshotai"\napi_key_env = "RELAY_KEY"\n',
        "k",
    )
    clients = ProviderClients(config.providers["relay"], source="k", environ={"RELAY_KEY": "x"})
    codec = clients.client()._codec
    assert isinstance(codec, ChatCompletionsCodec)
    assert codec.kimi


def test_an_unknown_dialect_is_refused() -> None:
    with pytest.raises(ConfigError, match="dialect"):
        parse_config('[providers.x]\nbase_url = "https://x.example/v1"\ndialect = "gemini"\n', "k")


def test_web_search_elsewhere_is_a_configuration_error() -> None:
    config = parse_config("[providers.openai]\nweb_search = true\n", "kun.toml")
    with pytest.raises(ConfigError, match=r"providers\.openai\.web_search.*Kimi"):
        build_router(config, environ={"OPENAI_API_KEY": "sk-x"})


def test_the_readme_kimi_example_is_valid() -> None:
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    example = re.search(r"### Kimi \(Moonshot\).*?```toml\n(.*?)```", readme, re.DOTALL)
    assert example is not None
    kimi = parse_config(example.group(1), "README.md").providers["kimi"]
    assert (kimi.base_url, kimi.api_key_env, kimi.web_search) == (
        "https://api.moonshot.ai/v1",
        "MOONSHOT_API_KEY",
        True,
    )
    clients = ProviderClients(kimi, source="README.md", environ=KEYS)
    codec = clients.client()._codec
    assert isinstance(codec, ChatCompletionsCodec)
    assert codec.kimi
