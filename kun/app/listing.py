"""The thread list behind ``kun threads``, ``/threads``, ``kun resume`` and
``kun -c``: one summary per thread, newest activity first.

Summaries come from the per-home thread index (:mod:`kun.app.thread_index`),
which replays only the logs that changed since it last saw them (tolerantly:
lines kun cannot read are skipped, as ``kun replay`` does), from the
thread's snapshot when it has one that can be trusted: a summary needs only
its outline (:func:`kun.store.snapshot.read_outline`), whose cost is the
turns, not the events. A log that cannot be replayed at all is listed with
its error when asked (``kun threads`` names it), else left out.

``--json`` prints :func:`to_json` of the list: an array of objects with
the fields of :class:`ThreadSummary`; times are epoch milliseconds,
``usage`` is the thread's usage totals, and ``cost_usd`` is ``null`` when
no call of the thread had a known price.
"""

from __future__ import annotations

import functools
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from kun.contracts.usage import UsageTotals
from kun.errors import KunError
from kun.store.errors import InvalidThreadId
from kun.store.paths import LOG_NAME, threads_root, validate_thread_id

if TYPE_CHECKING:
    from kun.domain.state import ThreadState

__all__ = [
    "ThreadSummary",
    "format_cost",
    "format_when",
    "list_threads",
    "summary_of",
    "thread_ids",
    "to_json",
]


class ThreadSummary(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    thread_id: str
    title: str = ""
    title_source: str | None = None
    workspace: str = ""
    provider: str | None = None
    model: str | None = None
    status: str = "unreadable"
    turns: int = 0
    created_at: int | None = None
    updated_at: int = 0
    usage: UsageTotals = UsageTotals()
    cost_usd: float | None = None
    hidden: bool = False
    error: str | None = None


def thread_ids(home: Path) -> list[str]:
    """Every thread under ``home`` that has a log, sorted."""
    root = threads_root(home)
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if _valid(p.name) and (p / LOG_NAME).is_file())


def _valid(name: str) -> bool:
    try:
        validate_thread_id(name)
    except InvalidThreadId:
        return False
    return True


def list_threads(
    home: Path,
    *,
    workspace: Path | None = None,
    limit: int | None = None,
    include_hidden: bool = False,
    include_unreadable: bool = False,
) -> list[ThreadSummary]:
    """The threads under ``home``, newest activity first (of ``workspace``
    only, when given; side threads only with ``include_hidden``)."""
    from kun.app.thread_index import indexed_summaries

    where = str(workspace.resolve()) if workspace is not None else None
    found: list[ThreadSummary] = []
    for summary in indexed_summaries(home, summarize):
        if summary.error is not None:
            if include_unreadable and where is None:
                found.append(summary)
            continue
        if summary.hidden and not include_hidden:
            continue
        if where is not None and summary.workspace != where:
            continue
        found.append(summary)
    found.sort(key=lambda s: (s.updated_at, s.thread_id), reverse=True)
    return found[:limit] if limit is not None else found


def summarize(home: Path, thread_id: str) -> ThreadSummary:
    """One thread's summary, or its error."""
    from kun.store.replay import replay_log
    from kun.store.snapshot import SNAPSHOT_NAME, read_outline

    path = threads_root(home) / thread_id / LOG_NAME
    try:
        state = read_outline(path.with_name(SNAPSHOT_NAME), path, thread_id)
        state = state or replay_log(path, mode="tolerant")
    except (KunError, OSError, ValueError) as exc:
        return ThreadSummary(thread_id=thread_id, updated_at=_mtime_ms(path), error=str(exc))
    return summary_of(thread_id, state)


def summary_of(thread_id: str, state: ThreadState) -> ThreadSummary:
    """The summary of the thread whose projection (or outline) is ``state``."""
    from kun.domain.titles import title_holder

    settings = state.settings
    usage = state.usage
    return ThreadSummary(
        thread_id=thread_id,
        title=settings.title,
        title_source=title_holder(settings),
        workspace=settings.workspace,
        provider=settings.provider,
        model=settings.model,
        status=state.status,
        turns=len(state.visible_turns),
        created_at=state.created_at,
        updated_at=state.updated_at or state.created_at or 0,
        usage=usage,
        cost_usd=None if usage.calls and usage.unpriced_calls == usage.calls else usage.cost_usd,
        hidden=settings.hidden,
    )


def _mtime_ms(path: Path) -> int:
    try:
        return int(path.stat().st_mtime * 1000)
    except OSError:
        return 0


def to_json(summaries: list[ThreadSummary]) -> bytes:
    return msgspec.json.encode(summaries)


def format_cost(usage: UsageTotals) -> str:
    """``unknown`` when no call had a price, or no usage was reported at all
    (a provider that sends none; never ``$0.0000``); a ``+`` when some had
    none, so a partial sum never reads as the whole."""
    if usage.unpriced_calls == usage.calls:
        return "unknown"
    return f"${usage.cost_usd:.4f}" + ("+" if usage.unpriced_calls else "")


def format_when(ms: int | None) -> str:
    """Epoch milliseconds as local time, to the minute."""
    if not ms:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ms / 1000))


@functools.cache
def _user_home() -> str:
    """Looked up once: a listing formats thousands of rows."""
    return os.path.expanduser("~")


def format_workspace(workspace: str) -> str:
    """``~`` for the home directory, as people write it."""
    home = _user_home()
    if home not in ("", "/") and (workspace == home or workspace.startswith(home + os.sep)):
        return "~" + workspace[len(home) :]
    return workspace or "-"
