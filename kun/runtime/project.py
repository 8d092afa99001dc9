"""The project context of a turn: the workspace's instructions file and a
short environment block, read once when the turn starts.

As Codex does, the model gets the workspace's ``AGENTS.md`` (else
``CLAUDE.md``, the name Claude Code reads) after the system prompt, and a
block naming the workspace, the OS, the shell and the date. Both are
recorded in ``turn_started`` (:class:`~kun.contracts.context.TurnContext`)
and every request of the turn is built from that record, so what was sent
can be read back from the log, and the bytes in front of the history stay
the same from step to step (and from turn to turn while the file and the
date do not change), which is what the providers' prefix caches need.

A file over :data:`MAX_INSTRUCTION_BYTES` is cut there (at a character
boundary), with a line telling the model so: a runaway file must not eat
the context window of every request.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Mapping
from datetime import date
from pathlib import Path

from kun.contracts.context import TurnContext

__all__ = [
    "INSTRUCTION_FILES",
    "MAX_INSTRUCTION_BYTES",
    "read_turn_context",
    "render_project_context",
]

INSTRUCTION_FILES = ("AGENTS.md", "CLAUDE.md")
"""Looked for in the workspace, in this order; the first that is a file wins."""

MAX_INSTRUCTION_BYTES = 32 * 1024


def read_turn_context(
    workspace: Path,
    *,
    system_prompt: str,
    today: date,
    reasoning_effort: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> TurnContext:
    """The context of a turn starting ``today`` in ``workspace``. An
    instructions file that cannot be read is left out, as if absent: a turn
    must not fail because of it."""
    env = os.environ if environ is None else environ
    name, text, size = _instructions(workspace)
    return TurnContext(
        system_prompt=system_prompt,
        instructions_file=name,
        instructions=text,
        instructions_bytes=size,
        workspace=str(workspace),
        os=f"{platform.system()} {platform.release()}".strip(),
        shell=Path(env.get("SHELL") or "sh").name,
        date=today.isoformat(),
        reasoning_effort=reasoning_effort,
    )


def _instructions(workspace: Path) -> tuple[str | None, str | None, int | None]:
    """The file's name, its text (cut to the limit), and its whole size when
    it was cut."""
    for name in INSTRUCTION_FILES:
        path = workspace / name
        try:
            if not path.is_file():
                continue
            with path.open("rb") as file:
                data = file.read(MAX_INSTRUCTION_BYTES + 1)
                size = os.fstat(file.fileno()).st_size
        except OSError:
            continue
        if len(data) <= MAX_INSTRUCTION_BYTES:
            return name, data.decode("utf-8", errors="replace"), None
        cut = data[:MAX_INSTRUCTION_BYTES].decode("utf-8", errors="ignore")
        return name, cut, max(size, len(data))
    return None, None, None


def render_project_context(context: TurnContext) -> str:
    """The leading system message after the system prompt: the instructions
    file, then the environment. A pure function of the record, so a request
    rebuilt from the log is the request that was sent."""
    parts: list[str] = []
    if context.instructions is not None and context.instructions.strip():
        text = context.instructions.rstrip("\n")
        if context.instructions_bytes is not None:
            shown = len(context.instructions.encode())
            text += (
                f"\n\n[kun: {context.instructions_file} is {context.instructions_bytes:,} "
                f"bytes; only its first {shown:,} are shown]"
            )
        parts.append(
            f"# Project instructions ({context.instructions_file})\n\n"
            f"<project_instructions>\n{text}\n</project_instructions>"
        )
    parts.append(
        "<environment_context>\n"
        f"  <workspace>{context.workspace}</workspace>\n"
        f"  <os>{context.os}</os>\n"
        f"  <shell>{context.shell}</shell>\n"
        f"  <date>{context.date}</date>\n"
        "</environment_context>"
    )
    return "\n\n".join(parts)
