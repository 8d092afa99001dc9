"""Finding a thread from what a user types.

Thread ids are long (``thr_01m8rh...``); people type the start of one. An id
that exists is taken as is; otherwise an unambiguous prefix names the one
thread it starts (``thr_`` may be left out: ``01m8rh`` finds
``thr_01m8rh...``). An ambiguous prefix is one error line listing the
candidates. Everywhere the CLI takes a thread id goes through
:func:`resolve_thread_id`.

:func:`recent_threads` is the short, newest-first list behind ``kun -c``,
``kun resume`` and ``/threads``: it replays each log (tolerantly: a thread
kun cannot read is skipped here, ``kun threads`` reports it).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kun.errors import KunError, UserMistake
from kun.store.errors import ThreadNotFound
from kun.store.paths import LOG_NAME, threads_root, validate_thread_id

__all__ = [
    "AmbiguousThreadId",
    "ThreadSummary",
    "latest_thread",
    "recent_threads",
    "resolve_thread_id",
    "thread_ids",
]

ID_PREFIX = "thr_"
SHOWN_CANDIDATES = 6


class AmbiguousThreadId(UserMistake):
    """A prefix that starts more than one thread id."""

    def __init__(self, prefix: str, candidates: list[str]) -> None:
        self.prefix = prefix
        self.candidates = tuple(candidates)
        shown = ", ".join(candidates[:SHOWN_CANDIDATES])
        more = len(candidates) - SHOWN_CANDIDATES
        tail = f" and {more} more" if more > 0 else ""
        super().__init__(
            f"thread id {prefix!r} is ambiguous: it starts {len(candidates)} threads "
            f"({shown}{tail}); type more of it"
        )


def thread_ids(home: Path) -> list[str]:
    """Every thread under ``home`` that has a log, sorted."""
    root = threads_root(home)
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if (p / LOG_NAME).is_file())


def resolve_thread_id(home: Path, text: str) -> str:
    """The thread ``text`` names: an existing id, else the one thread whose
    id it starts (with or without ``thr_``). Raises ``InvalidThreadId``,
    ``ThreadNotFound`` or :class:`AmbiguousThreadId`."""
    validate_thread_id(text)
    ids = thread_ids(home)
    if text in ids:
        return text
    matches = [i for i in ids if i.startswith(text)]
    if not matches and not text.startswith(ID_PREFIX):
        matches = [i for i in ids if i.startswith(ID_PREFIX + text)]
    if not matches:
        raise ThreadNotFound(text)
    if len(matches) > 1:
        raise AmbiguousThreadId(text, matches)
    return matches[0]


@dataclass(frozen=True)
class ThreadSummary:
    thread_id: str
    title: str
    workspace: str
    provider: str | None
    model: str | None
    status: str
    turns: int
    updated_at: int


def recent_threads(
    home: Path, *, workspace: Path | None = None, limit: int | None = None
) -> list[ThreadSummary]:
    """Visible threads, newest activity first (of ``workspace`` only, when
    given); side threads and logs kun cannot read are left out."""
    from kun.domain.reduce import Projector
    from kun.store.reader import read_log

    where = str(workspace.resolve()) if workspace is not None else None
    found: list[ThreadSummary] = []
    for thread_id in thread_ids(home):
        projector = Projector()
        try:
            projector.apply_all(read_log(threads_root(home) / thread_id / LOG_NAME))
        except (KunError, OSError, ValueError):
            continue
        state = projector.snapshot()
        settings = state.settings
        if settings.hidden or (where is not None and settings.workspace != where):
            continue
        found.append(
            ThreadSummary(
                thread_id=thread_id,
                title=settings.title,
                workspace=settings.workspace,
                provider=settings.provider,
                model=settings.model,
                status=state.status,
                turns=len(state.visible_turns),
                updated_at=state.updated_at or state.created_at or 0,
            )
        )
    found.sort(key=lambda s: (s.updated_at, s.thread_id), reverse=True)
    return found[:limit] if limit is not None else found


def latest_thread(home: Path, workspace: Path) -> str | None:
    """The thread of ``workspace`` with the most recent activity."""
    recent = recent_threads(home, workspace=workspace, limit=1)
    return recent[0].thread_id if recent else None
