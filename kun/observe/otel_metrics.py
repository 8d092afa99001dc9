"""OpenTelemetry metrics of model calls, as the GenAI semantic conventions
name them (imported only when tracing is on, like :mod:`kun.observe.otel`):

* ``gen_ai.client.token.usage`` (histogram, ``{token}``): a call's input
  and output tokens, one measurement each, told apart by
  ``gen_ai.token.type`` (``input``, ``output``);
* ``gen_ai.client.operation.duration`` (histogram, ``s``): how long a call
  took, with ``error.type`` when it failed;

both with ``gen_ai.operation.name`` (``chat``), ``gen_ai.provider.name``,
``gen_ai.request.model`` and ``gen_ai.response.model``, and the bucket
boundaries the conventions advise. Those attributes have few values (a
provider, a model), so the series stay few: no thread or turn id.

A meter provider someone already installed is used as it is. Otherwise kun
sets up the SDK's, exporting where ``OTEL_METRICS_EXPORTER`` says
(``otlp``, ``console``, ``none``) and, when that is unset, where the
traces go (``OTEL_TRACES_EXPORTER``): one switch sends both.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from opentelemetry import metrics
from opentelemetry.metrics import MeterProvider

from kun.observe.errors import ObserveError

__all__ = ["GenAiMetrics", "meter_provider_from_env"]

_TOKEN_BUCKETS = [float(4**k) for k in range(14)]
_DURATION_BUCKETS = [0.01 * 2**k for k in range(14)]


class GenAiMetrics:
    def __init__(self, provider: MeterProvider, *, owned: bool = False) -> None:
        """``owned``: kun made ``provider`` and shuts it down on close."""
        self.provider = provider
        self.owned = owned
        meter = provider.get_meter("kun")
        self.tokens = meter.create_histogram(
            "gen_ai.client.token.usage",
            unit="{token}",
            description="Number of input and output tokens used",
            explicit_bucket_boundaries_advisory=_TOKEN_BUCKETS,
        )
        self.duration = meter.create_histogram(
            "gen_ai.client.operation.duration",
            unit="s",
            description="GenAI operation duration",
            explicit_bucket_boundaries_advisory=_DURATION_BUCKETS,
        )

    def model_call(self, record: dict[str, Any]) -> None:
        """Measure one model call from its JSON-line record."""
        attributes = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": record["provider"],
            "gen_ai.request.model": record["model"],
        }
        if record.get("response_model"):
            attributes["gen_ai.response.model"] = record["response_model"]
        for kind in ("input", "output"):
            count = record.get(f"{kind}_tokens")
            if count is not None:
                self.tokens.record(count, {**attributes, "gen_ai.token.type": kind})
        if record.get("status") != "ok":
            attributes["error.type"] = record.get("error_code") or record.get("status", "error")
        self.duration.record(record["duration_ms"] / 1000, attributes)

    def close(self) -> None:
        if self.owned:
            shutdown = getattr(self.provider, "shutdown", None)
            if shutdown is not None:
                shutdown()


def meter_provider_from_env() -> tuple[MeterProvider, bool]:
    """The meter provider to use and whether kun made it (see the module
    docstring)."""
    current = metrics.get_meter_provider()
    proxy = type(current).__name__ == "_ProxyMeterProvider"  # the API's "none set yet"
    if not proxy and not isinstance(current, metrics.NoOpMeterProvider):
        return current, False
    try:
        from opentelemetry.sdk.metrics import MeterProvider as SdkProvider
        from opentelemetry.sdk.metrics.export import (
            ConsoleMetricExporter,
            MetricReader,
            PeriodicExportingMetricReader,
        )
        from opentelemetry.sdk.resources import Resource
    except ImportError as exc:
        raise ObserveError(
            "tracing is on but the OpenTelemetry SDK is not installed: "
            "pip install 'kun[otel]' (or set otel = false)"
        ) from exc

    traces = os.environ.get("OTEL_TRACES_EXPORTER", "otlp")
    name = os.environ.get("OTEL_METRICS_EXPORTER", traces).strip().lower()
    readers: list[MetricReader] = []
    if name == "console":
        readers.append(PeriodicExportingMetricReader(ConsoleMetricExporter(out=sys.stderr)))
    elif name == "otlp":
        readers.append(PeriodicExportingMetricReader(_otlp_exporter()))
    elif name != "none":
        raise ObserveError(f"OTEL_METRICS_EXPORTER={name!r}: kun knows otlp, console and none")
    resource = Resource.create({"service.name": "kun"})
    return SdkProvider(metric_readers=readers, resource=resource), True


def _otlp_exporter() -> Any:
    from kun.observe.otel import OTLP_PACKAGE

    try:
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import (  # type: ignore[import-not-found,unused-ignore]
            OTLPMetricExporter,
        )
    except ImportError as exc:
        raise ObserveError(
            f"metrics export over OTLP, but {OTLP_PACKAGE} is not installed: "
            f"pip install {OTLP_PACKAGE} (or set OTEL_METRICS_EXPORTER=none)"
        ) from exc
    return OTLPMetricExporter()
