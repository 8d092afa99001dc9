"""What the command line said about the runtime settings: a plain record,
importable without the runtime, so the CLI's option parsing stays light and
:mod:`kun.app.settings` need not know about click."""

from __future__ import annotations

from dataclasses import dataclass, fields

__all__ = ["RuntimeFlags"]


@dataclass(frozen=True)
class RuntimeFlags:
    """What the command line said; ``None``: it said nothing (the file or
    kun's default applies, :func:`kun.app.settings.runtime_settings`)."""

    approval_policy: str | None = None
    reasoning_effort: str | None = None
    max_steps: int | None = None
    max_wall_seconds: float | None = None
    max_cost_usd: float | None = None
    max_turn_tokens: int | None = None
    system_prompt: str | None = None

    def given(self) -> bool:
        return any(getattr(self, f.name) is not None for f in fields(self))
