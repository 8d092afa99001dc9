"""The server's names for the in-process adapter's engine
(:mod:`kun.app.local_engine`): ``kun serve`` composes one with
:func:`backend_from_config`, tests with :func:`backend_over`, and the routes
act on it through :class:`kun.app.local.LocalKun`."""

from __future__ import annotations

from kun.app.local_engine import Engine as Backend
from kun.app.local_engine import TurnOptions
from kun.app.local_engine import engine_from_config as backend_from_config
from kun.app.local_engine import engine_over as backend_over

__all__ = ["Backend", "TurnOptions", "backend_from_config", "backend_over"]
