"""Allow rules: what "always for this thread" at an approval covers.

A rule (:class:`~kun.contracts.threads.AllowRule`, kept in the thread's
settings) names a tool. For every tool but ``bash`` it covers every call of
that tool: the user said yes to the tool, whatever its arguments.

For ``bash`` it covers a *command prefix*, a few leading words:

* the first word (``pytest``, ``ls``, ``make``...);
* the first two for a program whose second word is a subcommand (``git
  status``, ``npm test``, ``cargo build``, ``docker ps``...), so approving
  ``git status`` never allows ``git push``; a third when that subcommand
  runs another program (``uv run pytest``, ``npm exec tsc``, ``docker run
  IMAGE``);
* for an interpreter, the script or module it runs (``python tools/x.py``,
  ``python -m pytest``).

A prefix covers only a *simple command*: one program and its arguments. A
command with anything else the shell would act on — ``;``, ``&`` (so
``&&``), ``|`` (so ``||``), ``<``, ``>``, ``$`` (variables, ``$(...)``),
backticks, parentheses, braces, a backslash or a line break, even inside
quotes — is never covered: ``git status; rm -rf x`` begins with ``git
status`` and is not it. Nor is a command that starts with a variable
assignment (``PATH=. git status``), and a program that runs another command
(``sudo``, ``env``, ``bash``, ``xargs``, ``find``, ``timeout``...), an
interpreter given code (``python -c``) or a subcommand program without its
subcommand (``git -C dir push``) gets no rule: such an approval is for that
call only. A rule trusts the program: ``pytest`` runs the workspace's tests
and ``make`` its Makefile, whatever the model wrote there.

Rules only turn an *ask* into *allow*; where the policy denies (``never``),
nothing runs. Pure: no IO.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

import msgspec

from kun.contracts.threads import AllowRule

__all__ = ["allows", "command_words", "describe", "rule_for"]

BASH = "bash"

_SHELL_SYNTAX = re.compile(r"[;&|<>$`(){}\\\n\r\x00]")
"""Anything in a command line that makes it more than one program with its
arguments (or could, depending on the shell's reading)."""

_RUNS_OTHERS = frozenset(
    {
        "sudo", "doas", "su", "env", "command", "builtin", "exec", "eval", "source", ".",
        "nohup", "nice", "ionice", "time", "timeout", "xargs", "parallel", "watch",
        "strace", "ltrace", "script", "ssh", "find", "bash", "sh", "zsh", "dash", "fish",
        "ksh", "csh", "tcsh", "busybox", "chroot", "unshare", "nsenter", "flock", "stdbuf",
    }
)  # fmt: skip
_SUBCOMMANDS = frozenset(
    {
        "git", "npm", "pnpm", "yarn", "bun", "deno", "cargo", "go", "docker", "podman",
        "kubectl", "helm", "gh", "uv", "pip", "pip3", "poetry", "pdm", "hatch", "conda",
        "dotnet", "gradle", "mvn", "bundle", "brew", "apt", "apt-get", "systemctl",
        "terraform", "rustup", "just", "nix", "swift", "mix", "composer", "tox", "nox",
    }
)  # fmt: skip
_RUNNER_SUBCOMMANDS = frozenset({"run", "exec", "x", "dlx", "tool"})
_RUNNERS = frozenset({"npx", "bunx", "pnpx", "pipx", "uvx"})
_INTERPRETERS = re.compile(r"(python|pypy)[0-9.]*|node|ruby|perl|php|Rscript|lua|julia")


def command_words(command: str) -> list[str] | None:
    """The words of ``command`` if it is a simple command a prefix rule can
    cover (see the module docstring), else ``None``."""
    if _SHELL_SYNTAX.search(command):
        return None
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    if not words or "=" in words[0]:
        return None
    return words


def _prefix(words: list[str]) -> tuple[str, ...] | None:
    program = words[0]
    rest = words[1:]
    if program in _RUNS_OTHERS:
        return None
    if _INTERPRETERS.fullmatch(program):
        if rest[:1] == ["-m"] and len(rest) > 1:
            return (program, "-m", rest[1])
        if rest and not rest[0].startswith("-"):
            return (program, rest[0])
        return None
    if program in _RUNNERS:
        return (program, rest[0]) if rest and not rest[0].startswith("-") else None
    if program in _SUBCOMMANDS:
        if not rest or rest[0].startswith("-"):
            return None
        if rest[0] in _RUNNER_SUBCOMMANDS:
            return (program, rest[0], rest[1]) if len(rest) > 1 else None
        return (program, rest[0])
    return (program,)


def _command(arguments: bytes | dict[str, Any]) -> str | None:
    if isinstance(arguments, dict):
        args: Any = arguments
    else:
        try:
            args = msgspec.json.decode(arguments)
        except msgspec.DecodeError:
            return None
    command = args.get("command") if isinstance(args, dict) else None
    return command if isinstance(command, str) else None


def rule_for(tool: str, arguments: bytes | dict[str, Any]) -> AllowRule | None:
    """The rule "always" would add for this call, or ``None`` when no rule
    may cover it (a ``bash`` command that is not simple, or that runs other
    commands)."""
    if tool != BASH:
        return AllowRule(tool=tool)
    command = _command(arguments)
    words = command_words(command) if command is not None else None
    prefix = _prefix(words) if words else None
    return None if prefix is None else AllowRule(tool=BASH, prefix=prefix)


def allows(
    rules: tuple[AllowRule, ...], tool: str, arguments: bytes | dict[str, Any]
) -> AllowRule | None:
    """The first rule that covers this call, if any. A rule with a prefix
    covers a simple command whose first words are the prefix's, word for
    word (``git status`` covers ``git status -s``, never ``git statusx``)."""
    words: list[str] | None = None
    for rule in rules:
        if rule.tool != tool:
            continue
        if not rule.prefix:
            return rule
        if words is None:
            command = _command(arguments)
            words = (command_words(command) if command is not None else None) or []
        if words[: len(rule.prefix)] == list(rule.prefix):
            return rule
    return None


def describe(rule: AllowRule) -> str:
    """``write_file``, or ``bash `git status …```."""
    return rule.describe()
