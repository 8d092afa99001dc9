"""Composing observability into a service (:func:`kun.app.session.open_service`).

:func:`observing` resolves the settings (``[observability]``, the
environment, the flags) and, when something is on, yields the tool host to
run turns on and the turn hooks that close each turn's trace. When
everything is off it yields the host and no hooks: the loop runs exactly as
it would without this package, and OpenTelemetry is never imported.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kun.observe.errors import ObserveError
from kun.observe.flags import given_flags
from kun.observe.observer import Observer
from kun.observe.settings import ObserveSettings, resolve
from kun.observe.sink import open_sink
from kun.observe.spans import Spans
from kun.tools.host import ToolHost

__all__ = ["Watched", "observer_for", "observing", "preflight"]


@dataclass(frozen=True)
class Watched:
    tools: ToolHost | None
    hooks: tuple[Observer, ...] = ()


def observer_for(
    settings: ObserveSettings, home: Path, *, spans: Spans | None = None
) -> Observer | None:
    """The observer ``settings`` ask for (``None``: nothing is on).
    ``spans``: a span maker to use instead of one from the environment (a
    test's in-memory exporter)."""
    if not settings.active:
        return None
    if settings.otel and spans is None:
        spans = _otel_spans()
    sink = open_sink(settings.log, home)
    return Observer(sink=sink, spans=spans if settings.otel else None, content=settings.content)


def _otel_spans() -> Spans:
    try:
        from kun.observe.otel import OtelSpans, provider_from_env
    except ImportError as exc:
        raise ObserveError(
            "tracing is on but OpenTelemetry is not installed: "
            "pip install 'kun[otel]' (or set otel = false)"
        ) from exc
    from kun.observe.otel_metrics import GenAiMetrics, meter_provider_from_env

    provider, owned = provider_from_env()
    meters, meters_owned = meter_provider_from_env()
    return OtelSpans(provider, owned=owned, metrics=GenAiMetrics(meters, owned=meters_owned))


def preflight(config: Any, environ: Mapping[str, str] | None = None) -> None:
    """Raise :class:`~kun.observe.errors.ObserveError` now if tracing is
    asked for and cannot run: for ``kun serve``, whose service starts
    inside the server, where an error would be a traceback."""
    table = getattr(config, "observability", None) if config is not None else None
    settings = resolve(table, os.environ if environ is None else environ, given_flags())
    if settings.otel:
        _otel_spans().close()


@asynccontextmanager
async def observing(
    home: Path,
    config: Any,
    tools: ToolHost | None,
    environ: Mapping[str, str] | None = None,
) -> AsyncIterator[Watched]:
    """``tools`` watched as ``config``'s ``[observability]``, the
    environment and the command's flags ask; the observer is closed (its
    sink flushed, its spans exported) on exit."""
    table = getattr(config, "observability", None) if config is not None else None
    settings = resolve(table, os.environ if environ is None else environ, given_flags())
    observer = observer_for(settings, home) if tools is not None else None
    if observer is None:
        yield Watched(tools)
        return
    try:
        yield Watched(observer.watch(tools) if tools is not None else None, (observer,))
    finally:
        observer.close()
