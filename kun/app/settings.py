"""The runtime settings in force, and where each came from.

A flag (:mod:`kun.cli.flags`, handed over as
:class:`~kun.app.overrides.RuntimeFlags`) beats ``kun.toml``'s ``[runtime]``
table, which beats kun's default. The same resolution serves the commands that run
turns (:func:`runtime_settings`) and ``kun config``, which shows each
value's source (:func:`resolve_runtime`), so what it prints is what a turn
gets.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from kun.app.overrides import RuntimeFlags
from kun.app.session import SYSTEM_PROMPT
from kun.config import Config
from kun.contracts.threads import ApprovalPolicy
from kun.domain.compaction import DEFAULT_COMPACT_AT
from kun.domain.repetition import RepetitionSettings
from kun.domain.resume_policy import ResumeSettings
from kun.runtime.context import TurnLimits

__all__ = ["RUNTIME_KEYS", "RuntimeSettings", "Sourced", "resolve_runtime", "runtime_settings"]

_LIMITS = TurnLimits()
_REPETITION = RepetitionSettings()
_RESUME = ResumeSettings()

RUNTIME_KEYS: tuple[tuple[str, str, Any], ...] = (
    ("approval_policy", "--approval", "on-request"),
    ("reasoning_effort", "--reasoning-effort", None),
    ("max_steps", "--max-steps", _LIMITS.max_steps),
    ("max_wall_seconds", "--max-wall-seconds", _LIMITS.max_wall_seconds),
    ("max_cost_usd", "--max-cost", _LIMITS.cost_budget_usd),
    ("max_turn_tokens", "--max-turn-tokens", _LIMITS.max_turn_tokens),
    ("system_prompt", "--system", SYSTEM_PROMPT),
    ("repetition_dice", "", _REPETITION.dice),
    ("repetition_min_chars", "", _REPETITION.min_chars),
    ("repetition_max_repeats", "", _REPETITION.max_repeats),
    ("goal_resume_base_seconds", "", _RESUME.base_seconds),
    ("goal_resume_max_seconds", "", _RESUME.cap_seconds),
    ("goal_resume_max_attempts", "", _RESUME.max_attempts),
    ("compact_at", "", DEFAULT_COMPACT_AT),
    ("model_titles", "", False),
)
"""Each ``[runtime]`` key, its flag (``""``: none) and kun's default."""


@dataclass(frozen=True)
class Sourced:
    """A value and where it came from: a flag, ``<file> [runtime]``, or
    ``default``."""

    value: Any
    source: str


@dataclass(frozen=True)
class RuntimeSettings:
    """``approval_policy`` is for new threads (a thread keeps its own
    unless ``--approval`` names one); ``repetition`` is for the loop's
    repeated-reply check (SPEC §7.2). The ``goal_resume_*`` keys are not
    here: :func:`kun.app.session.open_service` reads them from the config
    itself (:func:`kun.app.session.resume_settings`)."""

    approval_policy: ApprovalPolicy
    reasoning_effort: str | None
    limits: TurnLimits
    system_prompt: str
    sources: Mapping[str, str]
    repetition: RepetitionSettings = _REPETITION


def resolve_runtime(config: Config, flags: RuntimeFlags) -> dict[str, Sourced]:
    """Every ``[runtime]`` key's value in force, with its source."""
    resolved: dict[str, Sourced] = {}
    for key, flag, default in RUNTIME_KEYS:
        given = getattr(flags, key, None)
        written = getattr(config.runtime, key)
        if given is not None:
            resolved[key] = Sourced(given, flag)
        elif written is not None:
            resolved[key] = Sourced(written, config.source)
        else:
            resolved[key] = Sourced(default, "default")
    return resolved


def runtime_settings(config: Config, flags: RuntimeFlags | None = None) -> RuntimeSettings:
    """What the TurnService and a new thread get."""
    values = resolve_runtime(config, flags or RuntimeFlags())
    return RuntimeSettings(
        approval_policy=cast(ApprovalPolicy, values["approval_policy"].value),
        reasoning_effort=values["reasoning_effort"].value,
        limits=TurnLimits(
            max_steps=values["max_steps"].value,
            max_wall_seconds=values["max_wall_seconds"].value,
            cost_budget_usd=values["max_cost_usd"].value,
            max_turn_tokens=values["max_turn_tokens"].value,
        ),
        system_prompt=values["system_prompt"].value,
        sources={key: sourced.source for key, sourced in values.items()},
        repetition=RepetitionSettings(
            dice=values["repetition_dice"].value,
            min_chars=values["repetition_min_chars"].value,
            max_repeats=values["repetition_max_repeats"].value,
        ),
    )
