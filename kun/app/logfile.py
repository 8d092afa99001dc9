"""An ``events.jsonl`` FILE given where a command takes a THREAD (``kun
replay path/to/events.jsonl``, ``kun usage a.jsonl b.jsonl``).

A file is not a thread of the home, nor of a server: it is read here, on
this machine, as it is on disk (:class:`LogFile`), whichever adapter the
command otherwise works through. An argument is a file when it names one
(it contains a ``/`` or ends in ``.jsonl``); one that contains a ``/`` but
names a folder or nothing is a mistake, not a thread id.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from pathlib import Path

from kun.app.answers import ReplayNote, ThreadUsage
from kun.app.requests import ReplayThread
from kun.contracts.events import Event
from kun.errors import UserMistake

__all__ = ["LogFile", "events_in", "log_file"]


def events_in(path: Path) -> list[Event]:
    """Every event of a log that is whole (the demo's, just written), in order."""
    from kun.store.codec import decode_line

    return [decode_line(line) for line in path.read_bytes().splitlines() if line]


def log_file(thread: str) -> Path | None:
    """The file ``thread`` names, or ``None`` for a thread id (or a prefix)."""
    candidate = Path(thread)
    if ("/" in thread or thread.endswith(".jsonl")) and candidate.is_file():
        return candidate
    if "/" in thread and (candidate.is_dir() or thread.endswith(".jsonl")):
        found = "is a directory (give its events.jsonl)" if candidate.is_dir() else "no such file"
        raise UserMistake(f"{thread}: {found}; THREAD is a thread id or an events.jsonl file")
    return None


class LogFile:
    """The reads of :class:`~kun.app.interface.Kun` that make sense of a
    bare log file, named by the path as it was given."""

    def __init__(self, name: str, path: Path) -> None:
        self.name = name
        self.path = path

    async def replay(
        self, thread: str, request: ReplayThread
    ) -> AsyncGenerator[bytes | ReplayNote, None]:
        from kun.app.replaying import replayed

        async for piece in replayed(self.path, request):
            yield piece

    async def usage(self) -> ThreadUsage:
        from kun.app.local_reads import usage_report

        return usage_report([(self.name, self.path)]).threads[0]
