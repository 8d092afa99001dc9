"""Reading an API key from its environment variable, and refusing one that
can never be sent.

A key goes into an HTTP header; a header value with a control character
(a newline, ``\\x00``, an escape sequence), surrounding whitespace, a space
inside or a non-ASCII character is refused by the HTTP library at send time
with an error that quotes the header, key included, and no resend can ever
succeed. So the key is checked when it is read, and a bad one is a
:class:`~kun.config.ConfigError` that names the variable and what is wrong
with its value, never the value (nor where in it the fault is).

One exception: a single trailing newline (``\\n`` or ``\\r\\n``, as left by
``echo key > file`` or a secrets mount) is stripped, with a note on the
``kun.config`` logger, because the intent is unambiguous.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from kun.config.errors import ConfigError

__all__ = ["read_api_key", "value_problem"]

_log = logging.getLogger("kun.config")


def value_problem(value: str, *, spaces: bool = False) -> str | None:
    """What makes ``value`` unfit for an HTTP header holding a credential
    (``spaces``: any header), in words that quote nothing of it; ``None``
    when it is fit."""
    if not value.strip():
        return "is empty or only whitespace"
    if value != value.strip():
        return "has whitespace around it"
    for char in value:
        if not char.isascii():
            if not char.isprintable():
                return "holds a control character"
            return "holds a non-ASCII character"
        if char == " " and not spaces:
            return "holds a space"
        if not char.isprintable():
            return "holds a control character"
    return None


def read_api_key(
    environ: Mapping[str, str], variable: str, *, source: str, key: str, hint: str = ""
) -> str:
    """The key in ``variable``, one trailing newline stripped (with a note).

    Raises :class:`ConfigError` at ``source``/``key`` (the file and TOML key
    that name the variable, or imply it: ``hint`` says how) when the
    variable is not set, or when its value cannot be sent
    (:func:`value_problem`)."""
    value = environ.get(variable)
    if not value:
        raise ConfigError(
            source,
            key,
            f"expected the environment variable {variable} to hold the API key, but it is not "
            "set" + (f" {hint}" if hint else ""),
        )
    stripped = False
    for ending in ("\r\n", "\n"):
        if value.endswith(ending) and not value.endswith("\n" + ending):
            value, stripped = value.removesuffix(ending), True
            break
    problem = value_problem(value)
    if problem is not None:
        raise ConfigError(
            source,
            key,
            f"the environment variable {variable} cannot be sent as an API key: its value "
            f"{problem}. Set it to the key alone",
        )
    if stripped:
        _log.warning(
            "kun: note: the value of %s ends with a newline; kun strips it "
            "(fix the variable to silence this note)",
            variable,
        )
    return value
