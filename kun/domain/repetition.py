"""Repetition detection for goal turns (SPEC §7.2): is the model saying the
same thing again?

Under an active goal a reply without tool calls is asked to continue, so a
model that has nothing to do can loop on "OK, I'll fix it now". Equality does
not catch it: the punctuation, case and spacing of the same sentence drift
from one reply to the next. Two levels do: equal once normalised (case folded,
whitespace, punctuation and symbols dropped, in every script), or, for texts
long enough for the measure to mean something, a character-bigram Dice
similarity at or above a threshold.

:class:`RepetitionTracker` counts consecutive repeats and says what to do with
each reply: nothing, a recovery instruction (the first ``max_repeats``), or
stop (the one after). Pure: a frozen value in, a new value out, so the loop
may keep it where it likes and a test can drive it step by step.
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from typing import Annotated, Literal

import msgspec

__all__ = [
    "RepetitionSettings",
    "RepetitionTracker",
    "RepetitionVerdict",
    "bigram_dice",
    "is_repeat",
    "normalize",
    "recovery_instruction",
]

_DROPPED = frozenset("ZPS")


class RepetitionSettings(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The thresholds, from ``[runtime]`` (``repetition_dice``,
    ``repetition_min_chars``, ``repetition_max_repeats``). ``min_chars`` is
    counted after normalising; below it only equality counts, since two short
    texts share a high share of their few bigrams by chance."""

    dice: Annotated[float, msgspec.Meta(gt=0, le=1)] = 0.85
    min_chars: Annotated[int, msgspec.Meta(ge=2)] = 12
    max_repeats: Annotated[int, msgspec.Meta(ge=0)] = 3


def normalize(text: str) -> str:
    """Lowercase ``text`` and drop every separator (Z*), punctuation (P*) and
    symbol (S*) character: ``好的,我这就去改。`` and ``好的 我这就去改`` meet.
    Each character is lowered on its own, so what surrounds it (Greek final
    sigma) cannot change it."""
    return "".join(
        low for c in text for low in c.lower() if unicodedata.category(low)[0] not in _DROPPED
    )


def bigram_dice(a: str, b: str) -> float:
    """The Dice coefficient of the two strings' character bigrams, counted
    as multisets: ``2 * shared / (bigrams(a) + bigrams(b))``. 1.0 for equal
    strings (even too short to have a bigram), 0.0 when either has none."""
    if a == b:
        return 1.0
    if len(a) < 2 or len(b) < 2:
        return 0.0
    left = Counter(a[i : i + 2] for i in range(len(a) - 1))
    right = Counter(b[i : i + 2] for i in range(len(b) - 1))
    shared = sum((left & right).values())
    return 2 * shared / (len(a) + len(b) - 2)


def is_repeat(a: str, b: str, settings: RepetitionSettings | None = None) -> bool:
    """Whether reply ``b`` repeats reply ``a`` (raw texts; normalised here)."""
    s = settings or RepetitionSettings()
    na, nb = normalize(a), normalize(b)
    if na == nb:
        return True
    if len(na) < s.min_chars or len(nb) < s.min_chars:
        return False
    return bigram_dice(na, nb) >= s.dice


def recovery_instruction(repeat: int, max_repeats: int) -> str:
    """What the model is told after its ``repeat``-th repeated reply (ported
    from the upstream's goal no-tool recovery instruction)."""
    return (
        f"[kun] Your last reply repeated an earlier one (repeat {repeat} of at most "
        f"{max_repeats} before this turn is stopped). Do not restate the same status "
        "update, promise or summary. If the goal is truly done, audit it against the "
        "real state and call update_goal with status complete. If you are truly blocked, "
        "report it with update_goal as blocked, following the blocker audit. Otherwise "
        "do new, substantive work now: call a tool."
    )


class RepetitionVerdict(msgspec.Struct, frozen=True, kw_only=True):
    """What to do with one reply. ``action``: ``none`` (not a repeat),
    ``recover`` (inject ``instruction`` and continue) or ``stop`` (record a
    ``goal_repetition_stop`` warning and stop the turn); ``repeats`` is the
    count of consecutive repeats including this reply."""

    action: Literal["none", "recover", "stop"]
    repeats: int = 0
    instruction: str = ""


class RepetitionTracker(msgspec.Struct, frozen=True, kw_only=True):
    """The last reply seen (raw) and how many consecutive repeats led to it.
    Feed it the goal's replies without tool calls, in order; a reply that is
    not a repeat starts the count again. Start a new tracker when the goal
    changes."""

    settings: RepetitionSettings = RepetitionSettings()
    previous: str | None = None
    repeats: int = 0

    def observe(self, text: str) -> tuple[RepetitionTracker, RepetitionVerdict]:
        """The tracker after ``text``, and what to do with it."""
        if self.previous is None or not is_repeat(self.previous, text, self.settings):
            return msgspec.structs.replace(self, previous=text, repeats=0), _NONE
        repeats = self.repeats + 1
        after = msgspec.structs.replace(self, previous=text, repeats=repeats)
        limit = self.settings.max_repeats
        if repeats > limit:
            return after, RepetitionVerdict(action="stop", repeats=repeats)
        instruction = recovery_instruction(repeats, limit)
        return after, RepetitionVerdict(action="recover", repeats=repeats, instruction=instruction)


_NONE = RepetitionVerdict(action="none")
