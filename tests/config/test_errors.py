"""Every configuration mistake names the file, the key path and what was
expected; none quotes a secret back."""

from __future__ import annotations

import pytest

from kun.config import ConfigError, parse_config

SOURCE = "/etc/kun/kun.toml"
SECRET = "sk-live-5eCr3t-0123456789"


def error_of(text: str) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        parse_config(text, SOURCE)
    return caught.value


@pytest.mark.parametrize(
    ("text", "key", "expected"),
    [
        pytest.param(
            "[providers.openai]\nbase_url = 3",
            "providers.openai.base_url",
            "expected `string`, got `integer`",
            id="bad-type",
        ),
        pytest.param(
            "[providers.openai]\nidle_timeout = 'slow'",
            "providers.openai.idle_timeout",
            "expected `number`, got `string`",
            id="bad-type-number",
        ),
        pytest.param(
            "providers = 3", "providers", "expected `table`, got `integer`", id="not-a-table"
        ),
        pytest.param(
            '[providers.openai]\nbase_url = "ftp://files.example"',
            "providers.openai.base_url",
            "expected an http:// or https:// URL",
            id="not-a-url",
        ),
        pytest.param(
            "[providers.openai]\nidle_timeout = 0",
            "providers.openai.idle_timeout",
            "expected `number` > 0",
            id="not-positive",
        ),
        pytest.param(
            '[providers."my.relay"]\nbase_url = "https://relay.example"\ntimeout = 3',
            'providers."my.relay".timeout',
            "unknown key; expected one of: base_url, endpoint_format, api_key_env",
            id="unknown-key",
        ),
        pytest.param(
            "[provider.openai]",
            "provider",
            "unknown key; expected one of: default_provider, providers",
            id="unknown-top-level-key",
        ),
        pytest.param(
            '[providers.openai.models."gpt-4.1"]\ncontext = 5',
            'providers.openai.models."gpt-4.1".context',
            "unknown key; expected one of: input_modalities, max_context_tokens",
            id="unknown-model-key",
        ),
        pytest.param(
            "[providers.openai]\nendpoint_format = 'chat'",
            "providers.openai.endpoint_format",
            "expected one of: chat_completions, responses, messages, gemini, custom_endpoint",
            id="bad-choice",
        ),
        pytest.param(
            '[providers.openai.models."gpt-4.1"]\nmax_tokens = 0',
            'providers.openai.models."gpt-4.1".max_tokens',
            "expected `integer` >= 1",
            id="model-table",
        ),
        pytest.param(
            '[providers.openai.models."gpt-4.1"]\ninput_modalities = ["text", "smell"]',
            'providers.openai.models."gpt-4.1".input_modalities[1]',
            "expected one of: text, image, audio, video, pdf",
            id="array-item",
        ),
        pytest.param(
            "[providers.openai.retry]\nstatuses = [429, 42]",
            "providers.openai.retry.statuses[1]",
            "expected `integer` >= 100",
            id="retry-status",
        ),
        pytest.param(
            'default_provider = "azure"\n[providers.openai]',
            "default_provider",
            "expected the name of a provider (openai)",
            id="default-provider",
        ),
        pytest.param(
            '[providers.local]\nbase_url = "http://localhost:8080/v1"',
            "providers.local.default_model",
            "expected the model to use by default",
            id="no-default-model",
        ),
        pytest.param(
            '[providers.local]\ndefault_model = "m"',
            "providers.local.base_url",
            "expected the provider's URL",
            id="no-base-url",
        ),
        pytest.param(
            '[providers."a/b"]\nbase_url = "http://x.test"\ndefault_model = "m"',
            'providers."a/b"',
            "expected a provider name of letters, digits",
            id="provider-name",
        ),
        pytest.param(
            "[providers.relay]\n"
            'base_url = "https://relay.example/v1/chat/completions"\n'
            'endpoint_format = "custom_endpoint"\n'
            '[providers.relay.models.m]\nendpoint_format = "responses"',
            "providers.relay.models.m.endpoint_format",
            "expected none: the provider's base_url is a custom endpoint",
            id="custom-endpoint-fixes-the-format",
        ),
    ],
)
def test_an_error_names_the_file_the_key_and_what_was_expected(
    text: str, key: str, expected: str
) -> None:
    error = error_of(text)
    assert error.file == SOURCE
    assert error.key == key
    assert error.expected.startswith(expected)
    assert str(error) == f"{SOURCE}: {key}: {error.expected}"


def test_a_syntax_error_names_the_file_and_the_place() -> None:
    error = error_of("[providers.openai\nbase_url = 1\n")
    assert error.key == ""
    assert str(error).startswith(f"{SOURCE}: is not valid TOML: ")
    assert "line 1" in str(error)


@pytest.mark.parametrize(
    ("text", "key"),
    [
        (f'[providers.openai]\napi_key = "{SECRET}"', "providers.openai.api_key"),
        (f'[providers.my-relay]\ntoken = "{SECRET}"', "providers.my-relay.token"),
        (f'api_key = "{SECRET}"', "api_key"),
        (f'[providers.openai.models.m]\nsecret = "{SECRET}"', "providers.openai.models.m.secret"),
    ],
)
def test_a_literal_key_is_refused_with_advice_and_never_quoted(text: str, key: str) -> None:
    error = error_of(text)
    assert error.key == key
    assert "environment variable" in error.expected
    assert "api_key_env" in error.expected
    assert SECRET not in str(error)


def test_the_advice_names_a_variable_after_the_provider() -> None:
    assert 'api_key_env = "MY_RELAY_API_KEY"' in str(error_of('[providers.my-relay]\nkey = "x"'))


@pytest.mark.parametrize(
    ("text", "key"),
    [
        (
            f'[providers.openai.headers]\nAuthorization = "Bearer {SECRET}"',
            "providers.openai.headers.Authorization",
        ),
        (
            f'[providers.azure]\nheaders = {{ api-key = "{SECRET}" }}',
            "providers.azure.headers.api-key",
        ),
        (
            f'[providers.openai]\nbase_url = "https://user:{SECRET}@api.example/v1"',
            "providers.openai.base_url",
        ),
        (
            f'[providers.gemini]\nbase_url = "https://api.example/v1?key={SECRET}"',
            "providers.gemini.base_url",
        ),
        (f'[providers.openai]\napi_key_env = "{SECRET}"', "providers.openai.api_key_env"),
    ],
)
def test_a_credential_anywhere_in_the_file_is_refused_and_never_quoted(text: str, key: str) -> None:
    error = error_of(text)
    assert error.key == key
    assert "environment variable" in error.expected
    assert SECRET not in str(error)
