"""An API key is checked when it is read from its variable: one that can
never be sent (control characters, surrounding whitespace, non-ASCII) is a
:class:`ConfigError` naming the variable and never quoting the value; a
single trailing newline (``echo key > file``) is stripped, with a note."""

from __future__ import annotations

import logging

import pytest

from kun.config import ConfigError, infer_config, parse_config
from kun.model.factory import build_router
from tests.integration.secret_forms import leaks

KEY = "sk-proj-Zq81xVb3Kp0sT7uW2yE5"


def _router_error(value: str, variable: str = "OPENAI_API_KEY") -> ConfigError:
    config = infer_config({variable: value})
    with pytest.raises(ConfigError) as caught:
        build_router(config, environ={variable: value})
    return caught.value


@pytest.mark.parametrize(
    ("value", "said"),
    [
        (f" {KEY}", "whitespace"),
        (f"{KEY} ", "whitespace"),
        (f"{KEY}\t", "whitespace"),
        (f"{KEY}\n\n", "whitespace"),
        (f"\n{KEY}", "whitespace"),
        (f"{KEY}\r", "whitespace"),
        (f"{KEY[:8]}\n{KEY[8:]}", "control character"),
        (f"{KEY[:8]}\x00{KEY[8:]}", "control character"),
        (f"{KEY[:8]}\x1b[0m{KEY[8:]}", "control character"),
        (f"{KEY[:8]}\x7f{KEY[8:]}", "control character"),
        (f"{KEY[:8]}\u0085{KEY[8:]}", "control character"),
        (f"{KEY[:8]} {KEY[8:]}", "space"),
        (f"{KEY[:8]}é{KEY[8:]}", "non-ASCII"),
        ("\n", "empty"),
    ],
)
def test_a_key_that_cannot_be_sent_is_refused_naming_the_variable(value: str, said: str) -> None:
    error = _router_error(value)
    message = str(error)
    assert "OPENAI_API_KEY" in message and said in message
    assert "\n" not in message and "\r" not in message
    assert not leaks(KEY, message), message
    assert KEY[:8] not in message and KEY[8:] not in message


def test_a_configured_variable_is_checked_too() -> None:
    config = parse_config(
        '[providers.work]\nbase_url = "https://llm.example.test/v1"\n'
        'default_model = "m"\napi_key_env = "WORK_LLM"\n',
        "kun.toml",
    )
    with pytest.raises(ConfigError) as caught:
        build_router(config, environ={"WORK_LLM": f"{KEY}\x01"})
    assert str(caught.value).startswith("kun.toml: providers.work.api_key_env: ")
    assert "WORK_LLM" in str(caught.value) and KEY not in str(caught.value)


def test_one_trailing_newline_is_stripped_with_a_note(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    for ending in ("\n", "\r\n"):
        caplog.clear()
        value = KEY + ending
        environ = {"OPENAI_API_KEY": value}
        router = build_router(infer_config(environ), environ=environ)
        client = router.select()
        assert client._headers["authorization"] == f"Bearer {KEY}"  # type: ignore[attr-defined]
        notes = [r.getMessage() for r in caplog.records]
        assert len(notes) == 1 and "OPENAI_API_KEY" in notes[0] and "newline" in notes[0]
        assert not leaks(KEY, *notes)


def test_a_base_url_with_a_trailing_newline_is_refused() -> None:
    with pytest.raises(ConfigError) as caught:
        infer_config({"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": "https://relay.test/v1\n"})
    assert "OPENAI_BASE_URL" in str(caught.value)
    with pytest.raises(ConfigError) as file_error:
        parse_config('[providers.openai]\nbase_url = "https://relay.test/v1\\n"\n', "kun.toml")
    assert "providers.openai.base_url" in str(file_error.value)


def test_a_header_value_that_cannot_be_sent_is_refused() -> None:
    for value in ("kun\\n", "kun\\u0000", "caf\\u00e9", " kun"):
        with pytest.raises(ConfigError) as caught:
            parse_config(f'[providers.openai]\nheaders = {{ X-Title = "{value}" }}\n', "kun.toml")
        assert "providers.openai.headers.X-Title" in str(caught.value)


def test_a_local_server_priced_from_a_catalogue_needs_no_key() -> None:
    """``catalog`` borrows prices and capabilities; with a base_url of its
    own the provider is not that catalogue's server, so wants no key."""
    config = parse_config(
        '[providers.local]\nbase_url = "http://127.0.0.1:8080/v1"\ncatalog = "openai"\n'
        'default_model = "gpt-4.1-mini"\n',
        "kun.toml",
    )
    local = config.providers["local"]
    assert local.api_key_env is None and local.catalog == "openai"
    client = build_router(config, environ={}).select()
    assert "authorization" not in {k.lower() for k in client._headers}  # type: ignore[attr-defined]


def test_a_key_the_catalog_implies_is_blamed_on_catalog() -> None:
    config = parse_config('[providers.work]\ncatalog = "openai"\n', "kun.toml")
    with pytest.raises(ConfigError) as caught:
        build_router(config, environ={})
    message = str(caught.value)
    assert message.startswith("kun.toml: providers.work.catalog: expected the environment ")
    assert "OPENAI_API_KEY" in message and "base_url" in message and "api_key_env" in message


def test_a_key_the_provider_name_implies_is_blamed_on_the_provider() -> None:
    config = parse_config("[providers.openai]\n", "kun.toml")
    with pytest.raises(ConfigError) as caught:
        build_router(config, environ={})
    assert str(caught.value).startswith("kun.toml: providers.openai: expected the environment")
