"""The observability flags of the commands that run turns: ``--log-json``,
``--log-json-to TARGET`` and ``--log-content`` (``[observability]`` of
``kun.toml`` for one run).

Kept like the runtime flags (:mod:`kun.cli.flags`): each value goes into the
click context's ``meta`` and :func:`given_flags` reads it where the service
is composed, so no command's signature changes. ``--log-json`` takes no
value: an optional value would swallow the prompt of ``kun run --log-json
"fix it"``. Only click is imported here: ``kun --help`` stays fast.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

__all__ = ["given_flags", "observe_options"]

F = TypeVar("F", bound=Callable[..., Any])

_META = "kun.observe_flags"


def _keep(ctx: click.Context, param: click.Parameter, value: Any) -> None:
    if value not in (None, False) and param.name is not None:
        ctx.meta.setdefault(_META, {})[param.name] = value


def observe_options(func: F) -> F:
    """Add the observability flags to a command."""
    options = [
        click.option(
            "--log-json", "log_json", flag_value="file", default=None, callback=_keep,
            expose_value=False,
            help="Log one JSON line per model call and tool call to <home>/logs/.",
        ),
        click.option(
            "--log-json-to", "log_json_to", default=None, callback=_keep, expose_value=False,
            metavar="stderr|PATH", help="Log those JSON lines to stderr or to this file.",
        ),
        click.option(
            "--log-content", "log_content", is_flag=True, default=None, callback=_keep,
            expose_value=False,
            help="Put prompts, replies and tool arguments and output in those lines "
            "(scrubbed of known secrets).",
        ),
    ]  # fmt: skip
    for option in reversed(options):
        func = option(func)
    return func


def given_flags() -> dict[str, Any]:
    """The observability flags given to the command being run (none outside
    a click command)."""
    ctx = click.get_current_context(silent=True)
    given: dict[str, Any] = dict(ctx.meta.get(_META, {})) if ctx is not None else {}
    target = given.pop("log_json_to", None) or given.pop("log_json", None)
    given.pop("log_json", None)
    if target is not None:
        given["log"] = target
    return given
