"""The environment of the commands the model runs: kun's own, minus its secrets.

Whatever a command can read it can print, and whatever it prints becomes a
tool result: recorded in the log, shown on the screen and sent to the
provider. So ``bash`` runs its commands without these variables:

* the ones that hold the configured providers' API keys (each provider's
  ``api_key_env``), whatever their names;
* every variable whose name looks secret (:data:`SECRET_NAME`, case
  ignored):

  - ending in ``_KEY`` or ``APIKEY``, or with an ``API_KEY`` part:
    ``OPENAI_API_KEY``, ``AWS_SECRET_ACCESS_KEY``, ``STRIPE_KEY``;
  - with a ``TOKEN``/``TOKENS`` part: ``GITHUB_TOKEN``, ``GH_TOKEN``,
    ``AWS_SESSION_TOKEN``, ``HF_TOKEN`` (not ``TOKENIZERS_PARALLELISM``);
  - containing ``SECRET``, ``PASSWORD``, ``PASSWD`` or ``PASSPHRASE``:
    ``CLIENT_SECRET``, ``PGPASSWORD``, ``DB_PASSWORD``;
  - ending in ``_PWD`` (``MYSQL_PWD``; ``PWD`` and ``OLDPWD`` are
    directories and stay), ``_AUTH`` (``NPM_CONFIG__AUTH``; not
    ``SSH_AUTH_SOCK``, a socket) or ``_COOKIE``;

unless ``[tools.bash] env_allow`` in ``kun.toml`` names it (a command that
needs ``GITHUB_TOKEN`` to push). Everything else is passed on: ``PATH``,
``HOME``, ``LANG``, ``SSH_AUTH_SOCK``, ``AWS_ACCESS_KEY_ID`` (an id, useless
without its secret), and ``*_CREDENTIALS`` variables, which by convention
name a file (``GOOGLE_APPLICATION_CREDENTIALS``): withholding the path
would break the tools that use it and protect nothing, as the file itself
stays readable.

Withholding is not a sandbox: a command runs as the user and can read
``~/.aws/credentials``, a ``.env`` file or ``/proc/<kun's pid>/environ``.
That is why the values of the variables above (allow-listed ones included,
when at least eight characters long) are also the known secrets that the
tool host scrubs from every result before it is recorded
(:meth:`ToolEnvironment.secret_values`). A secret kun took out of its own
environment once read (``kun serve``'s token) is still in the process's
initial environment block, which ``/proc/<pid>/environ`` shows:
:func:`take_variable` erases it there too, and it is registered with
:func:`hold_secret` so it is scrubbed all the same. (The sandbox,
:mod:`kun.tools.sandbox`, shows a command no other process's ``/proc`` at
all.)
"""

from __future__ import annotations

import ctypes
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["SECRET_NAME", "ToolEnvironment", "hold_secret", "looks_secret", "take_variable"]

SECRET_NAME = re.compile(
    r"""
    _KEY$ | APIKEY$ | (?:^|_)API_KEY(?:_|$)
    | TOKENS?(?:_|$)
    | SECRET | PASSWORD | PASSWD | PASSPHRASE
    | _PWD$ | _AUTH$ | COOKIE
    """,
    re.IGNORECASE | re.VERBOSE,
)
"""Names of variables a command does not get (see the module docstring)."""

_MIN_REDACTED = 8

_held: set[str] = set()


def hold_secret(value: str) -> None:
    """Scrub ``value`` from every tool result from now on, though no
    variable holds it any more (see the module docstring)."""
    if len(value.strip()) >= _MIN_REDACTED:
        _held.add(value)


def take_variable(name: str) -> str | None:
    """The value of the variable ``name``, removed from kun's environment
    and erased from the process's initial environment block (the one
    ``/proc/<pid>/environ`` shows to every process of the user, which
    removing the variable leaves as it was). Where there is no such block
    to read (not Linux), it is only removed."""
    value = os.environ.pop(name, None)
    if value is not None:
        _erase_initial(f"{name}={value}".encode())
    return value


def _erase_initial(entry: bytes) -> None:
    """Overwrite ``entry`` (``NAME=value``) with zero bytes wherever the
    initial environment block holds it whole. The block is read from
    ``/proc/self/environ`` and written only where the memory at its
    address (``env_start`` of ``/proc/self/stat``) holds the same bytes."""
    try:
        with open("/proc/self/environ", "rb") as file:
            block = file.read()
        with open("/proc/self/stat", encoding="ascii") as file:
            fields = file.read().rsplit(")", 1)[1].split()
        start = int(fields[_ENV_START_FIELD - 3])
    except (OSError, ValueError, IndexError):
        return
    if not block or ctypes.string_at(start, len(block)) != block:
        return
    at = block.find(entry + b"\0")
    while at != -1:
        if at == 0 or block[at - 1] == 0:
            ctypes.memset(start + at, 0, len(entry))
        at = block.find(entry + b"\0", at + 1)


_ENV_START_FIELD = 50
"""``env_start`` in ``/proc/<pid>/stat`` (proc(5)), counted from 1; the
fields from the third on follow the command name's closing parenthesis."""


def looks_secret(name: str) -> bool:
    """Whether a variable called ``name`` probably holds a secret."""
    return SECRET_NAME.search(name) is not None


@dataclass(frozen=True, slots=True)
class ToolEnvironment:
    """Which variables the commands the model runs do not get.

    ``withhold``: names withheld whatever they look like (the providers' key
    variables); ``allow``: names passed on whatever they look like (the
    user's ``env_allow``; it wins over ``withhold`` too, as the user said
    so)."""

    withhold: frozenset[str] = frozenset()
    allow: frozenset[str] = frozenset()

    def withholds(self, name: str) -> bool:
        """Whether a command runs without the variable ``name``."""
        if name in self.allow:
            return False
        return name in self.withhold or looks_secret(name)

    def command_env(self, environ: Mapping[str, str] | None = None) -> dict[str, str]:
        """``environ`` (default: kun's environment) without what is withheld."""
        env = os.environ if environ is None else environ
        return {name: value for name, value in env.items() if not self.withholds(name)}

    def secret_values(self, environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
        """The values to scrub from tool results: those of every variable
        withheld or allow-listed despite its name, when at least eight
        characters long (a short value is a flag, not a key, and scrubbing
        it would shred ordinary text), and those :func:`hold_secret` holds."""
        env = os.environ if environ is None else environ
        named = (
            value
            for name, value in sorted(env.items())
            if (name in self.withhold or looks_secret(name)) and len(value.strip()) >= _MIN_REDACTED
        )
        return (*named, *sorted(_held))
