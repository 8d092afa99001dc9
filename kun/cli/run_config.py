"""The note ``kun run`` writes when a thread's turns read the ``kun.toml``
of its workspace rather than the one here."""

from __future__ import annotations

import sys
from pathlib import Path

from kun.app.interface import Kun

__all__ = ["config_note"]


def config_note(kun: Kun, workspace: str | None) -> None:
    """Name on stderr the ``kun.toml`` of the thread's workspace when the
    in-process adapter's turns read it and it is not the one here (a
    thread continued from another folder runs as it did at home). Over a
    server the configuration is the server's: nothing to say."""
    source = getattr(kun, "config_source", None)  # only LocalKun reads a kun.toml here
    if not isinstance(source, str) or workspace is None:
        return
    if Path(source).parent == Path(workspace) and Path(workspace) != Path.cwd().resolve():
        print(f"kun: note: configuration from {source} (the thread's workspace)", file=sys.stderr)
