"""Reasoning dialects: one effort string, five ways to say it."""

from __future__ import annotations

from typing import Any

import pytest

from kun.contracts.capabilities import UNKNOWN, ModelCapabilities, ReasoningProtocol
from kun.model.request.reasoning import (
    ANTHROPIC_DEFAULT_MAX_TOKENS,
    ANTHROPIC_THINKING_MAX_TOKENS,
    anthropic_thinking,
    chat_reasoning,
    is_azure_openai_host,
    responses_reasoning,
    thinking_budget,
)

DEEPSEEK = "https://api.deepseek.com/v1"
RELAY = "https://relay.example.test/v1"
AZURE = "https://team.openai.azure.com/openai/deployments/d"


def caps(protocol: ReasoningProtocol, **fields: Any) -> ModelCapabilities:
    return ModelCapabilities(known=True, reasoning=True, reasoning_protocol=protocol, **fields)


@pytest.mark.parametrize(
    ("effort", "url", "fields"),
    [
        (None, DEEPSEEK, {}),
        ("high", DEEPSEEK, {"reasoning_effort": "high", "thinking": {"type": "enabled"}}),
        ("on", DEEPSEEK, {"thinking": {"type": "enabled"}}),
        ("off", DEEPSEEK, {"thinking": {"type": "disabled"}}),
        ("high", RELAY, {"reasoning_effort": "high"}),
        ("off", RELAY, {}),
        ("on", RELAY, {}),
    ],
)
def test_deepseek_sends_thinking_only_to_its_own_host(
    effort: str | None, url: str, fields: dict[str, Any]
) -> None:
    assert chat_reasoning(caps("deepseek-chat-completions"), effort, url) == fields


def test_glm_and_mimo_toggle_thinking() -> None:
    glm, mimo = caps("glm"), caps("mimo")
    assert chat_reasoning(glm, "high", RELAY) == {"thinking": {"type": "enabled"}}
    assert chat_reasoning(mimo, "off", RELAY) == {"thinking": {"type": "disabled"}}
    assert chat_reasoning(mimo, None, RELAY) == {}
    preserved = caps("glm", reasoning_history="required")
    assert chat_reasoning(preserved, "on", RELAY) == {
        "thinking": {"type": "enabled", "clear_thinking": False}
    }


def test_openai_levels() -> None:
    openai = caps("openai-responses")
    assert chat_reasoning(openai, "low", None) == {"reasoning_effort": "low"}
    assert chat_reasoning(openai, "on", None) == {}
    assert responses_reasoning(openai, "xhigh", None) == {"reasoning": {"effort": "xhigh"}}
    assert responses_reasoning(openai, "off", None) == {}
    deepseek = caps("deepseek-chat-completions")
    assert responses_reasoning(deepseek, "off", DEEPSEEK) == {"reasoning": {"effort": "none"}}


@pytest.mark.parametrize(
    "url",
    [
        AZURE,
        "https://x.cognitiveservices.azure.com/openai/v1",
        "https://TEAM.OpenAI.Azure.com/openai",
    ],
)
def test_azure_never_gets_thinking(url: str) -> None:
    assert is_azure_openai_host(url)
    for protocol in ("openai-responses", "deepseek-chat-completions", "glm"):
        assert chat_reasoning(caps(protocol), "high", url) == {}  # type: ignore[arg-type]
        assert responses_reasoning(caps(protocol), "high", url) == {}  # type: ignore[arg-type]
    assert anthropic_thinking(caps("anthropic-thinking"), "high", url, None).thinking is None


def test_unknown_models_and_no_protocol_send_nothing() -> None:
    for effort in ("off", "on", "high"):
        assert chat_reasoning(UNKNOWN, effort, DEEPSEEK) == {}
        assert responses_reasoning(UNKNOWN, effort, None) == {}
        plan = anthropic_thinking(UNKNOWN, effort, None, None)
        assert (plan.thinking, plan.max_tokens) == (None, ANTHROPIC_DEFAULT_MAX_TOKENS)


def test_anthropic_budget_is_tied_to_max_tokens() -> None:
    claude = caps("anthropic-thinking")
    plan = anthropic_thinking(claude, "high", None, None)
    assert plan.max_tokens == ANTHROPIC_THINKING_MAX_TOKENS
    assert plan.thinking == {"type": "enabled", "budget_tokens": 24576}
    assert plan.enabled
    small = anthropic_thinking(claude, "max", None, 4096)
    assert small.thinking == {"type": "enabled", "budget_tokens": 3072}
    assert anthropic_thinking(claude, "high", None, 1500).thinking is None
    off = anthropic_thinking(claude, "off", None, None)
    assert (off.thinking, off.max_tokens, off.enabled) == (None, 8192, False)


def test_default_max_tokens_respect_the_models_output_limit() -> None:
    limited = caps("anthropic-thinking", max_output_tokens=16000)
    assert anthropic_thinking(limited, "on", None, None).max_tokens == 16000
    assert anthropic_thinking(limited, None, None, None).max_tokens == 8192
    assert anthropic_thinking(limited, "on", None, 50000).max_tokens == 50000


def test_deepseek_anthropic_endpoint_toggles_thinking_on_its_host() -> None:
    deepseek = caps("deepseek-chat-completions")
    url = "https://api.deepseek.com/anthropic"
    plan = anthropic_thinking(deepseek, "high", url, None)
    assert plan.thinking == {"type": "enabled"}
    assert plan.max_tokens == ANTHROPIC_THINKING_MAX_TOKENS
    assert anthropic_thinking(deepseek, "off", url, None).thinking == {"type": "disabled"}
    assert anthropic_thinking(deepseek, "high", RELAY, None).thinking is None


@pytest.mark.parametrize(
    ("effort", "budget"),
    [("minimal", 4096), ("low", 8192), ("on", 16384), ("medium", 16384), ("weird", 16384)],
)
def test_budget_shares(effort: str, budget: int) -> None:
    assert thinking_budget(effort, 32768) == budget
