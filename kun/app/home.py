"""Which home a command on this machine means (``--home``, ``$KUN_HOME``,
``~/.kun``), for the surfaces: they name a home, and the store decides what
lives in it (:func:`kun.store.paths.resolve_home` is the one rule; a
thread's log is at :func:`log_path`)."""

from __future__ import annotations

from kun.store.paths import log_path, resolve_home

__all__ = ["log_path", "resolve_home"]
