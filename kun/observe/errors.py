"""The one error of this package: observability asked for and impossible."""

from __future__ import annotations

from kun.errors import UserMistake

__all__ = ["ObserveError"]


class ObserveError(UserMistake):
    """Tracing is on but its packages are missing, or the exporter named
    is unknown: one readable line, and kun does not start the run."""
