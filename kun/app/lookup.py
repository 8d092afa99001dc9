"""Finding a thread from what a user types.

Thread ids are long (``thr_01m8rh...``); people type the start of one. An id
that exists is taken as is; otherwise an unambiguous prefix names the one
thread it starts (``thr_`` may be left out: ``01m8rh`` finds
``thr_01m8rh...``). An ambiguous prefix is one error line listing the
candidates. Everywhere the CLI takes a thread id goes through
:func:`resolve_thread_id`.

:func:`recent_threads` is the short, newest-first list behind ``kun -c``,
``kun resume`` and ``/threads`` (:mod:`kun.app.listing`, which ``kun threads``
uses too): a thread kun cannot read is skipped here, ``kun threads``
reports it.
"""

from __future__ import annotations

from pathlib import Path

from kun.app.listing import ThreadSummary, list_threads, thread_ids
from kun.errors import UserMistake
from kun.store.errors import ThreadNotFound
from kun.store.paths import validate_thread_id

__all__ = [
    "AmbiguousThreadId",
    "ThreadSummary",
    "latest_thread",
    "recent_threads",
    "resolve_among",
    "resolve_thread_id",
    "thread_ids",
    "unique_prefix_length",
]

ID_PREFIX = "thr_"
SHOWN_CANDIDATES = 6
SHORT_ID = 12
"""The length of a thread id kun prints for people (``thr_`` and the
first 8 characters of its time): unique unless threads started within
about a second of each other."""


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


def resolve_thread_id(home: Path, text: str) -> str:
    """The thread ``text`` names: an existing id, else the one thread whose
    id it starts (with or without ``thr_``). Raises ``InvalidThreadId``,
    ``ThreadNotFound`` or :class:`AmbiguousThreadId`."""
    validate_thread_id(text)
    return resolve_among(thread_ids(home), text)


def resolve_among(ids: list[str], text: str) -> str:
    """:func:`resolve_thread_id` among ``ids`` (a database's threads)."""
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


def recent_threads(
    home: Path, *, workspace: Path | None = None, limit: int | None = None
) -> list[ThreadSummary]:
    """Visible threads, newest activity first (of ``workspace`` only, when
    given); side threads and logs kun cannot read are left out."""
    return list_threads(home, workspace=workspace, limit=limit)


def latest_thread(home: Path, workspace: Path) -> str | None:
    """The thread of ``workspace`` with the most recent activity."""
    recent = recent_threads(home, workspace=workspace, limit=1)
    return recent[0].thread_id if recent else None


def unique_prefix_length(known: list[str], shown: list[str]) -> int:
    """The shortest length, at least :data:`SHORT_ID`, at which each of
    ``shown`` names one thread among ``known`` (:func:`resolve_thread_id`;
    locally, :func:`thread_ids` of the home)."""
    ids = sorted(set(known) | set(shown))
    where = {thread_id: n for n, thread_id in enumerate(ids)}
    needed = SHORT_ID
    for thread_id in shown:
        n = where[thread_id]
        for other in ids[max(n - 1, 0) : n + 2]:
            if other != thread_id:
                needed = max(needed, _common(thread_id, other) + 1)
    return needed


def _common(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n
