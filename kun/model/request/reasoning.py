"""Reasoning effort, translated into each model's dialect (SPEC §8.3).

The loop speaks one open string: ``None`` (no preference: send nothing,
the provider's default applies), ``off``, ``on`` (the model's default level)
or a level (``minimal``, ``low``, ``medium``, ``high``, ``xhigh``, ``max``,
anything a model declares). The model's
:attr:`~kun.contracts.capabilities.ModelCapabilities.reasoning_protocol`
says how that becomes request fields:

* ``deepseek-chat-completions``: a level -> ``reasoning_effort``; on the
  official host ``api.deepseek.com`` only, also ``thinking: {type:
  enabled|disabled}`` (relays answer 400 to it). On the Anthropic-format
  endpoint: ``thinking: {type}`` (official host). On Responses:
  ``reasoning.effort`` (``none`` for off, official host).
* ``glm``: ``thinking: {type: enabled|disabled}``, plus ``clear_thinking:
  false`` when the model wants its reasoning back (preserved thinking).
* ``mimo``: ``thinking: {type: enabled|disabled}``.
* ``kimi`` (Moonshot): ``thinking: {type: enabled|disabled}``, as Kosong
  sends it; no ``reasoning_effort`` (Moonshot calls it legacy) and no
  ``clear_thinking`` (GLM's): Kimi keeps the reasoning it is sent back.
* ``openai-responses``: a level -> ``reasoning: {effort}`` (Responses) or
  ``reasoning_effort`` (chat completions); ``on``/``off`` leave the default.
* ``anthropic-thinking``: ``thinking: {type: enabled, budget_tokens}``, the
  budget a share of ``max_tokens`` (below).
* ``gemini-thinking``: ``generationConfig.thinkingConfig`` with a
  ``thinkingBudget`` (below) and ``includeThoughts`` (thought summaries
  stream as reasoning).
* ``none``: nothing, whatever the effort.

Azure OpenAI hosts (``*.openai.azure.com``, ``*.cognitiveservices.azure.com``)
never get reasoning fields. A protocol with no field for the wire format in
use sends nothing.

Anthropic budget: ``max_tokens`` is shared by thinking and the answer, so it
defaults to 32768 with thinking (8192 without; capped by the model's output
limit when known) and the budget is a share of it — ``minimal`` 1/8, ``low``
1/4, ``on``/``medium``/unknown levels 1/2, ``high`` 3/4, ``xhigh``/``max``
7/8 — at least 1024 (the API's floor) and leaving at least 1024 tokens of
answer. When that cannot fit, thinking stays off.

Gemini budget (tokens of thinking, Google's own mapping of OpenAI's
levels): ``minimal`` 512, ``low`` 1024, ``medium`` 8192, ``high`` 24576,
``xhigh``/``max`` 32768; ``on`` and unknown levels ``-1`` (the model
decides). ``off`` is a budget of 0, except for the Pro models, which cannot
stop thinking (0 is a 400 there): they get their floor, 128, and no
thoughts. A caller's ``max_tokens`` caps the budget at half of it, since
thinking counts against the output limit.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import msgspec

from kun.contracts.capabilities import ModelCapabilities
from kun.model.endpoints import is_deepseek_host

__all__ = [
    "ANTHROPIC_DEFAULT_MAX_TOKENS",
    "ANTHROPIC_THINKING_MAX_TOKENS",
    "AnthropicThinking",
    "anthropic_thinking",
    "chat_reasoning",
    "gemini_thinking",
    "is_azure_openai_host",
    "responses_reasoning",
    "thinking_budget",
]

ANTHROPIC_DEFAULT_MAX_TOKENS = 8192
"""Messages requires ``max_tokens``; this is sent when nothing else says."""

ANTHROPIC_THINKING_MAX_TOKENS = 32768
"""The default with thinking on: thinking and answer share the budget, and a
small one truncates tool-call JSON."""

_MIN_BUDGET = 1024
_SHARES = {"minimal": 1 / 8, "low": 1 / 4, "high": 3 / 4, "xhigh": 7 / 8, "max": 7 / 8}
_GEMINI_BUDGETS = {
    "minimal": 512,
    "low": 1024,
    "medium": 8192,
    "high": 24576,
    "xhigh": 32768,
    "max": 32768,
}
_GEMINI_PRO_FLOOR = 128
_AZURE_SUFFIXES = (".openai.azure.com", ".cognitiveservices.azure.com")


class AnthropicThinking(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """What an Anthropic-format request sends: ``max_tokens``, and the
    ``thinking`` field (``None``: none). ``enabled`` says thinking is on, so
    signed thinking blocks go back with the assistant turns."""

    max_tokens: int
    thinking: dict[str, Any] | None = None
    enabled: bool = False


def is_azure_openai_host(url: str | None) -> bool:
    host = (urlsplit(url).hostname or "").lower() if url else ""
    return host.endswith(_AZURE_SUFFIXES)


def chat_reasoning(
    capabilities: ModelCapabilities, effort: str | None, url: str | None
) -> dict[str, Any]:
    """The reasoning fields of a chat completions body."""
    protocol = _protocol(capabilities, url)
    wants = _wants(effort)
    if wants is None or protocol == "none":
        return {}
    fields: dict[str, Any] = {}
    if protocol == "deepseek-chat-completions":
        if wants and _is_level(effort):
            fields["reasoning_effort"] = effort
        if url is not None and is_deepseek_host(url):
            fields["thinking"] = _toggle(wants)
    elif protocol in ("glm", "mimo", "kimi"):
        fields["thinking"] = _toggle(wants)
        if protocol == "glm" and wants and capabilities.reasoning_history == "required":
            fields["thinking"]["clear_thinking"] = False
    elif protocol == "openai-responses" and wants and _is_level(effort):
        fields["reasoning_effort"] = effort
    return fields


def responses_reasoning(
    capabilities: ModelCapabilities, effort: str | None, url: str | None
) -> dict[str, Any]:
    """The reasoning fields of a Responses body."""
    protocol = _protocol(capabilities, url)
    wants = _wants(effort)
    if wants is None or protocol not in ("openai-responses", "deepseek-chat-completions"):
        return {}
    if wants and _is_level(effort):
        return {"reasoning": {"effort": effort}}
    official = url is not None and is_deepseek_host(url)
    if not wants and protocol == "deepseek-chat-completions" and official:
        return {"reasoning": {"effort": "none"}}
    return {}


def anthropic_thinking(
    capabilities: ModelCapabilities,
    effort: str | None,
    url: str | None,
    max_tokens: int | None,
) -> AnthropicThinking:
    """``max_tokens`` and the thinking field of an Anthropic-format body;
    ``max_tokens`` is the caller's, if given."""
    protocol = _protocol(capabilities, url)
    wants = _wants(effort)
    limit = capabilities.max_output_tokens
    if protocol == "anthropic-thinking" and wants:
        tokens = max_tokens or _capped(ANTHROPIC_THINKING_MAX_TOKENS, limit)
        budget = thinking_budget(effort, tokens)
        if budget is not None:
            thinking = {"type": "enabled", "budget_tokens": budget}
            return AnthropicThinking(max_tokens=tokens, thinking=thinking, enabled=True)
    if protocol == "deepseek-chat-completions" and wants is not None:
        if url is not None and is_deepseek_host(url):
            default = ANTHROPIC_THINKING_MAX_TOKENS if wants else ANTHROPIC_DEFAULT_MAX_TOKENS
            tokens = max_tokens or _capped(default, limit)
            return AnthropicThinking(max_tokens=tokens, thinking=_toggle(wants), enabled=wants)
    return AnthropicThinking(max_tokens=max_tokens or _capped(ANTHROPIC_DEFAULT_MAX_TOKENS, limit))


def gemini_thinking(
    capabilities: ModelCapabilities, effort: str | None, model: str, max_tokens: int | None
) -> dict[str, Any] | None:
    """The ``thinkingConfig`` of a Gemini body, or ``None`` to send none."""
    wants = _wants(effort)
    if wants is None or capabilities.reasoning_protocol != "gemini-thinking":
        return None
    if not wants:
        floor = _GEMINI_PRO_FLOOR if "pro" in model.lower() else 0
        return {"thinkingBudget": floor, "includeThoughts": False}
    budget = _GEMINI_BUDGETS.get((effort or "").lower(), -1)
    if max_tokens is not None and budget != -1:
        budget = max(min(budget, max_tokens // 2), _GEMINI_PRO_FLOOR)
    return {"thinkingBudget": budget, "includeThoughts": True}


def thinking_budget(effort: str | None, max_tokens: int) -> int | None:
    """Anthropic's ``budget_tokens`` for ``effort`` within ``max_tokens``, or
    ``None`` when no budget of at least 1024 leaves 1024 tokens of answer."""
    share = _SHARES.get((effort or "").lower(), 1 / 2)
    budget = min(int(max_tokens * share), max_tokens - _MIN_BUDGET)
    return budget if budget >= _MIN_BUDGET else None


def _protocol(capabilities: ModelCapabilities, url: str | None) -> str:
    return "none" if is_azure_openai_host(url) else capabilities.reasoning_protocol


def _wants(effort: str | None) -> bool | None:
    """``None``: no preference; otherwise whether thinking is wanted."""
    if not effort:
        return None
    return effort.lower() != "off"


def _is_level(effort: str | None) -> bool:
    return bool(effort) and (effort or "").lower() not in ("on", "off")


def _toggle(on: bool) -> dict[str, Any]:
    return {"type": "enabled" if on else "disabled"}


def _capped(tokens: int, limit: int | None) -> int:
    return min(tokens, limit) if limit else tokens
