"""The runtime flags of the commands that run turns (``kun``, ``kun chat``,
``kun resume``, ``kun run``): ``--reasoning-effort``, ``--max-steps``,
``--max-wall-seconds``, ``--max-cost``, ``--max-turn-tokens`` and
``--system``, each the flag of a ``[runtime]`` key of ``kun.toml``
(``--approval`` is the commands' own), and the ``[observability]`` flags
(:mod:`kun.observe.flags`).

The options are not parameters of the commands: each keeps its value in
the click context's ``meta``, where :func:`runtime_flags` finds them, so a
new setting changes no command's signature. Only click is imported here:
``kun --help`` stays fast.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, TypeVar

import click

from kun.app.overrides import RuntimeFlags
from kun.observe.flags import observe_options

__all__ = ["RuntimeFlags", "runtime_flags", "runtime_options"]

F = TypeVar("F", bound=Callable[..., Any])

_META = "kun.runtime_flags"


def _keep(ctx: click.Context, param: click.Parameter, value: Any) -> None:
    if value is not None and param.name is not None:
        ctx.meta.setdefault(_META, {})[param.name] = value


def _effort(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """Check a level given; with none, import nothing (kun.config costs every
    command ~0.1 s: the group runs this callback before each one)."""
    if value is None:
        return value
    from kun.config.schema import EFFORT_PATTERN

    if re.fullmatch(EFFORT_PATTERN, value) is None:
        raise click.BadParameter(
            "expected a level in lowercase letters: off, on, low, medium, high...",
            ctx=ctx,
            param=param,
        )
    _keep(ctx, param, value)
    return value


def _system(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is not None and not value.strip():
        raise click.BadParameter("expected some text (leave it out for kun's own)", ctx, param)
    _keep(ctx, param, value)
    return value


def runtime_options(func: F) -> F:
    """Add the runtime flags to a command."""
    positive = click.FloatRange(min=0, min_open=True)
    options = [
        click.option(
            "--reasoning-effort", "reasoning_effort", default=None, callback=_effort,
            expose_value=False, metavar="LEVEL",
            help="Reasoning effort: off, on, or a level (low, medium, high...).",
        ),
        click.option(
            "--max-steps", "max_steps", type=click.IntRange(min=1), default=None,
            callback=_keep, expose_value=False,
            help="Fail a turn that reaches this many model steps.",
        ),
        click.option(
            "--max-wall-seconds", "max_wall_seconds", type=positive, default=None,
            callback=_keep, expose_value=False, metavar="SECONDS",
            help="Fail a turn that runs longer than this.",
        ),
        click.option(
            "--max-cost", "max_cost_usd", type=positive, default=None,
            callback=_keep, expose_value=False, metavar="USD",
            help="Fail a turn once its priced cost reaches this.",
        ),
        click.option(
            "--max-turn-tokens", "max_turn_tokens", type=click.IntRange(min=1), default=None,
            callback=_keep, expose_value=False, metavar="TOKENS",
            help="Fail a turn once its prompt and completion tokens reach this.",
        ),
        click.option(
            "--system", "system_prompt", default=None, callback=_system, expose_value=False,
            metavar="TEXT", help="System prompt replacing kun's persona.",
        ),
    ]  # fmt: skip
    for option in reversed(options):
        func = option(func)
    return observe_options(func)


def runtime_flags(approval_policy: str | None = None) -> RuntimeFlags:
    """The runtime flags given to the command being run (with its
    ``--approval``); all ``None`` outside a click command."""
    ctx = click.get_current_context(silent=True)
    given: dict[str, Any] = dict(ctx.meta.get(_META, {})) if ctx is not None else {}
    return RuntimeFlags(approval_policy=approval_policy, **given)
