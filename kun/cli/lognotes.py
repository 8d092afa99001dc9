"""kun's log records, as a terminal user should see them.

The model client logs each retry and each failure (``kun.model``). Left to
Python's last-resort handler, a failure printed on stderr beside the error
item the live view already shows (the same error three times), a retry that
then succeeded printed as a failure, and both landed on the spinner's line.
While a turn is shown, :func:`notes_from_log` routes those records instead:

* a retry becomes one quiet line, ``retrying in 3 s, attempt 2/5``;
* a model failure is dropped: the turn records it, and the view shows it
  once, as an error item;
* an error logged elsewhere in kun (a bug, a failed hook) is one line.

The retry line reads the client's record (``retrying in %.2f s (attempt
%d): %s``: the wait, and the attempt that failed); a test runs a real 429
through the loopback provider, so a change of that record is caught.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["LogNotes", "notes_from_log"]

_RETRY = "retrying in "


class LogNotes(logging.Handler):
    def __init__(self, note: Callable[[str], None], max_attempts: Callable[[], int]) -> None:
        super().__init__(logging.INFO)
        self._note = note
        self._max_attempts = max_attempts

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = self._text(record)
            if text is not None:
                self._note(text)
        except Exception:
            self.handleError(record)

    def _text(self, record: logging.LogRecord) -> str | None:
        model = record.name == "kun.model" or record.name.startswith("kun.model.")
        if model and str(record.msg).startswith(_RETRY) and isinstance(record.args, tuple):
            delay, failed = record.args[:2]
            if isinstance(delay, int | float) and isinstance(failed, int):
                budget = self._max_attempts()
                return f"retrying in {_seconds(delay)}, attempt {failed + 1}/{budget}"
            return None
        if not model and record.levelno >= logging.ERROR:
            return f"error: {record.getMessage()}"
        return None


def _seconds(delay: float) -> str:
    return f"{delay:.0f} s" if delay >= 1 or delay == 0 else f"{delay:.1f} s"


@contextmanager
def notes_from_log(note: Callable[[str], None], max_attempts: Callable[[], int]) -> Iterator[None]:
    """Route the ``kun`` loggers' records to ``note`` (see the module
    docstring) inside the block; the loggers are as they were after it."""
    logger = logging.getLogger("kun")
    handler = LogNotes(note, max_attempts)
    level, propagate = logger.level, logger.propagate
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        logger.propagate = propagate
