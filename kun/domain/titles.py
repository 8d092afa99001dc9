"""Thread titles: who may write one, and the one a first prompt gives.

A thread is titled at once from its first prompt, so ``kun threads`` and
``kun resume`` show something a person recognises. A model-written title
(a background call, not built yet) may replace that later; a title the user
set is never replaced by anything automatic. ``title_auto`` (older logs)
and ``title_source`` together say who holds the title:

=========================  ==========  ====================================
settings                   holder      replaced by
=========================  ==========  ====================================
``title_auto`` false       ``user``    the user only
source ``user``            ``user``    the user only
source ``model``           ``model``   a newer model title, the user
source ``prompt``          ``prompt``  a model title, the user
no source                  nobody      anything (the first prompt, ...)
=========================  ==========  ====================================

Pure: callers record the change as ``thread_updated`` (:func:`title_changes`).
"""

from __future__ import annotations

from typing import Any

from msgspec import UNSET

from kun.contracts.threads import ThreadSettings, TitleSource

__all__ = ["TITLE_WIDTH", "may_retitle", "title_changes", "title_from_prompt", "title_holder"]

TITLE_WIDTH = 60
_RANK: dict[TitleSource | None, int] = {None: 0, "prompt": 1, "model": 2, "user": 3}


def title_from_prompt(prompt: str, width: int = TITLE_WIDTH) -> str:
    """The first line that holds anything, its whitespace collapsed, cut at
    a word to ``width`` characters with an ellipsis."""
    line = next((" ".join(row.split()) for row in prompt.splitlines() if row.strip()), "")
    if len(line) <= width:
        return line
    cut = line[: width - 1]
    if " " in cut[width // 2 :]:
        cut = cut.rsplit(" ", 1)[0]
    return cut.rstrip(" .,;:") + "…"


def title_holder(settings: ThreadSettings) -> TitleSource | None:
    """Who wrote the current title (``None``: nobody yet, the default)."""
    if not settings.title_auto:
        return "user"
    source = settings.title_source
    return None if source is UNSET else source


def may_retitle(settings: ThreadSettings, source: TitleSource) -> bool:
    """Whether a title from ``source`` may replace the current one: the user
    always may; an automatic source only replaces a weaker one (a model
    title also a model title), so a later prompt never retitles."""
    if source == "user":
        return True
    holder = title_holder(settings)
    if holder == "model" and source == "model":
        return True
    return _RANK[source] > _RANK[holder]


def title_changes(settings: ThreadSettings, title: str, source: TitleSource) -> dict[str, Any]:
    """The ``thread_updated`` fields that set ``title`` from ``source``, or
    nothing when it may not (or when ``title`` is blank)."""
    title = " ".join(title.split())
    if not title or not may_retitle(settings, source):
        return {}
    changes: dict[str, Any] = {"title": title, "title_source": source}
    if source == "user":
        changes["title_auto"] = False
    return changes
