"""``--workspace DIR`` given for a thread that exists (``kun run --thread``,
``kun resume``): the user asked for the thread's turns to run there, so the
thread is rebound (``thread_updated``) rather than the flag ignored, and
the caller says so. An imported thread names a folder of the machine it
came from; this is how it gets one here."""

from __future__ import annotations

from pathlib import Path

import anyio

from kun.app.threadops import thread_state
from kun.runtime.service import TurnService

__all__ = ["rebind_workspace"]


async def rebind_workspace(service: TurnService, thread_id: str, workspace: Path) -> str | None:
    """Make ``workspace`` the thread's; the note to show, or ``None`` when
    it already was."""
    path = str(await anyio.Path(workspace).resolve())
    old = (await thread_state(service, thread_id)).settings.workspace
    if old == path:
        return None
    await service.update_thread(thread_id, workspace=path)
    return f"thread {thread_id} now works in {path} (was {old or 'unset'})"
