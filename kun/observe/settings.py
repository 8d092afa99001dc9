"""What is observed and where it goes: ``[observability]`` of ``kun.toml``,
then the environment, then the flags, the later winning.

``log``: ``off`` (the default), ``file`` (``<home>/logs/kun-YYYYMMDD.jsonl``,
one file a UTC day, appended), ``stderr``, or a path (appended, never
rotated). ``content``: prompts, replies, tool arguments and output go into
the lines too, scrubbed of known secrets. ``otel``: OpenTelemetry spans
(:mod:`kun.observe.otel`, the ``kun[otel]`` extra). The environment's
``KUN_LOG_JSON`` (a ``log`` value), ``KUN_LOG_CONTENT=1`` and ``KUN_OTEL=1``
reach a server started by a supervisor that takes no flags.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["ObserveSettings", "resolve"]

_TRUE = frozenset({"1", "true", "yes", "on"})


@dataclass(frozen=True)
class ObserveSettings:
    log: str = "off"
    content: bool = False
    otel: bool = False

    @property
    def active(self) -> bool:
        return self.log != "off" or self.otel


def resolve(table: Any, environ: Mapping[str, str], flags: Mapping[str, Any]) -> ObserveSettings:
    """The settings from ``table`` (an ``[observability]`` table or
    ``None``), ``environ`` and ``flags`` (:func:`kun.observe.flags.given_flags`)."""
    log = table.log if table is not None else "off"
    content = bool(table.log_content) if table is not None else False
    otel = bool(table.otel) if table is not None else False
    log = environ.get("KUN_LOG_JSON") or log
    content = content or environ.get("KUN_LOG_CONTENT", "").lower() in _TRUE
    otel = otel or environ.get("KUN_OTEL", "").lower() in _TRUE
    log = flags.get("log") or log
    content = content or bool(flags.get("log_content"))
    return ObserveSettings(log=log, content=content, otel=otel)
