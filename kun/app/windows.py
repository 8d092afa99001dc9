"""The context windows and compaction threshold a TurnService gets from
configuration (:mod:`kun.runtime.compact` decides with them when a turn
compacts its history)."""

from __future__ import annotations

from collections.abc import Callable

from kun.config import Config
from kun.domain.compaction import DEFAULT_COMPACT_AT
from kun.model.capabilities import capabilities

__all__ = ["compact_at", "context_windows"]


def context_windows(config: Config) -> Callable[[str, str], int | None]:
    """Provider and model to the model's ``max_context_tokens``, from the
    capability table with the provider's overrides; ``None`` for a
    provider kun does not know (a scripted one), or a model without one."""

    def window(provider: str, model: str) -> int | None:
        found = config.providers.get(provider)
        if found is None:
            return None
        return capabilities(found.catalog, model, found.model_settings(model)).max_context_tokens

    return window


def compact_at(config: Config) -> float:
    """``[runtime] compact_at`` (no flag sets it), else kun's default."""
    written = config.runtime.compact_at
    return written if written is not None else DEFAULT_COMPACT_AT
