"""What a turn told the model besides the conversation: the system prompt,
the workspace's project instructions and a short environment block.

It is read once when the turn starts and recorded in its ``turn_started``
event, so the log holds the request's inputs as they were sent: a replay
never re-reads ``AGENTS.md`` (which may have changed since) and never asks
the clock what day it is.
"""

from __future__ import annotations

import msgspec

__all__ = ["TurnContext"]


class TurnContext(msgspec.Struct, frozen=True, kw_only=True, gc=False, omit_defaults=True):
    """The inputs of every request of one turn but its history.

    ``instructions`` is the text of ``instructions_file`` (``AGENTS.md``,
    else ``CLAUDE.md``, in the workspace) as sent: cut to kun's limit when
    the file is larger, in which case ``instructions_bytes`` is the file's
    whole size. ``date`` is the turn's start date (local, ``YYYY-MM-DD``).
    ``reasoning_effort`` is the effort the turn asked for (``None``: the
    provider's default).
    """

    system_prompt: str = ""
    instructions_file: str | None = None
    instructions: str | None = None
    instructions_bytes: int | None = None
    workspace: str = ""
    os: str = ""
    shell: str = ""
    date: str = ""
    reasoning_effort: str | None = None
