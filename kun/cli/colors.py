"""Whether kun may colour what it writes.

Colour is for people at a terminal: it is off when the stream is not a
terminal, when ``NO_COLOR`` holds any non-empty value (https://no-color.org),
and for the rest of the process once ``--no-color`` is given
(:func:`disable_color`). Every surface that colours (``kun run``'s live view,
the session, the demo) asks :func:`use_color`; prompt_toolkit reads
``NO_COLOR`` itself, and the session passes it a monochrome depth for the
flag.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, TextIO, TypeVar

import click

__all__ = ["color_allowed", "disable_color", "no_color_option", "use_color"]

F = TypeVar("F", bound=Callable[..., Any])

_disabled = False


def disable_color() -> None:
    global _disabled
    _disabled = True


def color_allowed() -> bool:
    """Neither ``--no-color`` nor ``NO_COLOR`` forbids colour."""
    return not _disabled and not os.environ.get("NO_COLOR")


def use_color(stream: TextIO) -> bool:
    """Colour ``stream``: allowed, and a terminal."""
    try:
        return color_allowed() and stream.isatty()
    except (AttributeError, ValueError):
        return False


def _on_flag(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value:
        disable_color()


def no_color_option(func: F) -> F:
    """``--no-color`` on a command: it takes effect as soon as it is parsed
    and reaches the command as nothing, so it changes no signature."""
    return click.option(
        "--no-color",
        is_flag=True,
        expose_value=False,
        is_eager=True,
        callback=_on_flag,
        help="No colour (NO_COLOR=1 does the same).",
    )(func)
