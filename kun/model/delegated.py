"""Providers that run whole turns: the ``agent-sdk`` kind (SPEC §9).

A provider of ``kind = "agent-sdk"`` is not asked for completions: the
Claude Agent SDK runs the turn's whole loop (its model, its tools, kun's
tools bridged to it) and kun records what it did
(:mod:`kun.runtime.agent_sdk`). To the rest of kun it is a provider like
any other — chosen per thread, listed, recorded in ``turn_started`` — so
the router returns for it an :class:`AgentSdkModel`: a
:class:`~kun.model.port.ModelClient` that carries the turn's
:class:`AgentSdkSettings`, which :func:`kun.runtime.loop.run_turn` finds
(:func:`delegated_settings`) and hands the turn over with. Asked to stream a
single request (a title, a summary), it answers with an ``error`` chunk:
it has no such thing to offer.

Only Claude models run there. A thread whose model is another provider's
(made under DeepSeek, say, then switched) gets the provider's default
model rather than an id the SDK would refuse. The SDK itself is an
optional extra: choosing the provider without it installed is one error
naming ``kun[claude]``; it is only imported when a turn runs.
"""

from __future__ import annotations

import importlib.util
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, replace
from typing import Any, Self

from kun.config import ConfigError, ProviderConfig, key_path
from kun.contracts.capabilities import ModelCapabilities
from kun.contracts.model import ErrorChunk, ModelRequest, ModelStreamChunk
from kun.model.capabilities import capabilities

__all__ = [
    "AGENT_SDK_KIND",
    "ENGINE",
    "EXTRA",
    "AgentSdkModel",
    "AgentSdkSettings",
    "AgentSdkSource",
    "claude_model",
    "delegated_settings",
    "sdk_installed",
]

AGENT_SDK_KIND = "agent-sdk"
ENGINE = "claude-agent-sdk"
EXTRA = "kun[claude]"
SDK_MODULE = "claude_agent_sdk"
CATALOG = "anthropic"


def sdk_installed() -> bool:
    """Whether the Claude Agent SDK can be imported (without importing it)."""
    return importlib.util.find_spec(SDK_MODULE) is not None


def claude_model(model: str | None, default: str) -> str:
    """``model`` if it is a Claude model id, else ``default``."""
    return model if model and model.lower().startswith("claude") else default


@dataclass(frozen=True)
class AgentSdkSettings:
    """What a delegated turn needs of its provider. ``cli_path``: the
    ``claude`` executable (``None``: the SDK's own). ``token_env``: the
    variable holding the subscription's OAuth token (``None``: the login
    ``claude`` keeps). ``sdk``: the SDK as the engine uses it (a
    :class:`kun.runtime.agent_sdk.sdk.SdkApi`; ``None``: the installed
    ``claude_agent_sdk``, imported when a turn runs); tests inject a fake.
    ``effort``: the reasoning effort asked for (``None``: the SDK's)."""

    provider: str
    model: str
    cli_path: str | None = None
    token_env: str | None = None
    effort: str | None = None
    sdk: Any = None


class AgentSdkModel:
    """The :class:`~kun.model.port.ModelClient` of an ``agent-sdk``
    provider (see the module docstring)."""

    def __init__(self, settings: AgentSdkSettings) -> None:
        self.delegated = settings

    @property
    def provider(self) -> str:
        return self.delegated.provider

    @property
    def model(self) -> str:
        return self.delegated.model

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelStreamChunk]:
        yield ErrorChunk(
            message=f"provider {self.provider!r} ({AGENT_SDK_KIND}) runs whole turns through "
            "the Claude Agent SDK and answers no single request; use an HTTP provider for this",
            code="delegated_provider",
        )

    def with_thinking(self, effort: str) -> Self:
        return type(self)(replace(self.delegated, effort=effort))

    def with_max_completion_tokens(self, n: int) -> Self:
        """The SDK budgets its own answers: the same model."""
        return self


def delegated_settings(client: object) -> AgentSdkSettings | None:
    """The settings of the delegated provider ``client`` is, or wraps (an
    observed or switchable model holds it as ``inner`` or ``client``)."""
    for _ in range(8):
        if isinstance(client, AgentSdkModel):
            return client.delegated
        client = getattr(client, "inner", None) or getattr(client, "client", None)
        if client is None:
            return None
    return None


class AgentSdkSource:
    """An ``agent-sdk`` provider as the router sees it (a
    :class:`~kun.model.router.ModelSource`). ``sdk``: the SDK the turns
    use (``None``: the installed one; tests give a fake)."""

    def __init__(
        self,
        config: ProviderConfig,
        *,
        source: str,
        sdk: Any = None,
        installed: Callable[[], bool] = sdk_installed,
    ) -> None:
        self._config = config
        self._source = source
        self._sdk = sdk
        self._installed = installed

    @property
    def name(self) -> str:
        return self._config.name

    @property
    def default_model(self) -> str:
        return self._config.default_model

    def capabilities(self, model: str | None = None) -> ModelCapabilities:
        model = claude_model(model, self._config.default_model)
        return capabilities(CATALOG, model, self._config.model_settings(model))

    def client(self, model: str | None = None) -> AgentSdkModel:
        """The client for ``model`` (a non-Claude id gets the default).
        Raises :class:`~kun.config.ConfigError` naming the extra when the
        SDK is not installed."""
        if self._sdk is None and not self._installed():
            raise ConfigError(
                self._source,
                key_path(("providers", self._config.name, "kind")),
                f"the Claude Agent SDK installed for kind = {AGENT_SDK_KIND!r}: "
                f"pip install '{EXTRA}'",
            )
        return AgentSdkModel(
            AgentSdkSettings(
                provider=self._config.name,
                model=claude_model(model, self._config.default_model),
                cli_path=self._config.cli_path,
                token_env=self._config.api_key_env,
                sdk=self._sdk,
            )
        )

    async def aclose(self) -> None:
        """Nothing is kept open between turns: each turn's SDK client is
        closed with the turn."""
