"""The open-file limit of ``kun serve``.

Every connection, and every thread while something writes it (its log and
its lock file), holds file descriptors; the usual soft limit of 1,024 is a
convention for interactive shells, not a quota. ``kun serve`` raises its
soft limit to the hard one once at start, as servers usually do, and says
so in the log (debug level).
"""

from __future__ import annotations

import logging
import resource

__all__ = ["raise_fd_limit"]

_log = logging.getLogger(__name__)


def raise_fd_limit() -> int:
    """Raise ``RLIMIT_NOFILE``'s soft limit to the hard limit; the soft
    limit in force afterwards (unchanged when it cannot be raised)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft == resource.RLIM_INFINITY or soft >= hard:
        return soft
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (OSError, ValueError) as exc:
        _log.debug("open-file soft limit left at %d (hard %d): %s", soft, hard, exc)
        return soft
    _log.debug("raised the open-file soft limit from %d to %d (the hard limit)", soft, hard)
    return hard
