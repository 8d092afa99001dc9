"""A question's options as the terminal shows them, and the answer a
person's typed reply stands for.

Options are numbered from 1, and typing an option's number answers with
that option's text: the model asked for one of its options, not for
``"2"``. A number that is no option's (``5`` of three) is still the
option's own text when an option reads exactly so (options ``10`` and
``20``); otherwise it is refused, so the terminal asks again rather than
send the model a number it never offered. Anything else is a free answer
and goes as typed. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["NotAnOption", "chosen_answer", "numbered"]


class NotAnOption(ValueError):
    """A number that names no option."""

    def __init__(self, number: int, count: int) -> None:
        self.number, self.count = number, count
        super().__init__(f"there is no option {number}: type 1 to {count}, or your own answer")


def numbered(options: Sequence[str]) -> list[str]:
    """``1. first``, ``2. second``, ... one line per option."""
    return [f"{n}. {option}" for n, option in enumerate(options, 1)]


def chosen_answer(reply: str, options: Sequence[str]) -> str:
    """The answer ``reply`` stands for; raises :class:`NotAnOption`."""
    typed = reply.strip()
    if not options or not (typed.isascii() and typed.isdecimal()):
        return reply
    number = int(typed)
    if 1 <= number <= len(options):
        return options[number - 1]
    if typed in options:
        return typed
    raise NotAnOption(number, len(options))
