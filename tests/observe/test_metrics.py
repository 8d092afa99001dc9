"""GenAI metrics of a real turn, read back with the SDK's in-memory metric
reader: ``gen_ai.client.token.usage`` (input and output tokens of each model
call) and ``gen_ai.client.operation.duration``, with the semantic
conventions' attributes; and where kun sends them when it sets metrics up."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider

from kun.observe.errors import ObserveError
from kun.observe.observer import Observer
from kun.observe.otel import OtelSpans
from kun.observe.otel_metrics import GenAiMetrics, meter_provider_from_env
from tests.observe.support import observed, run_turn

pytestmark = pytest.mark.anyio
MODEL = {
    "gen_ai.operation.name": "chat",
    "gen_ai.provider.name": "scripted",
    "gen_ai.request.model": "scripted",
    "gen_ai.response.model": "scripted-1-20261201",
}


async def _measured(tmp_path: Path) -> dict[str, tuple[str, list[HistogramDataPoint]]]:
    reader = InMemoryMetricReader()
    metrics = GenAiMetrics(MeterProvider(metric_readers=[reader]))
    observer = Observer(spans=OtelSpans(TracerProvider(), metrics=metrics))
    async with observed(tmp_path, observer) as (service, thread_id):
        turn = await run_turn(service, thread_id)
    observer.close()
    assert turn.status == "completed"
    data = reader.get_metrics_data()
    assert data is not None
    found: dict[str, tuple[str, list[HistogramDataPoint]]] = {}
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                points = [p for p in metric.data.data_points if isinstance(p, HistogramDataPoint)]
                found[metric.name] = (metric.unit or "", points)
    return found


def _attributes(point: HistogramDataPoint) -> dict[str, Any]:
    return dict(point.attributes or {})


async def test_token_usage_is_a_histogram_by_token_type(tmp_path: Path) -> None:
    unit, points = (await _measured(tmp_path))["gen_ai.client.token.usage"]
    assert unit == "{token}"
    by_type = {_attributes(p)["gen_ai.token.type"]: p for p in points}
    assert sorted(by_type) == ["input", "output"]
    assert (by_type["input"].count, by_type["input"].sum) == (2, 120 + 180)
    assert (by_type["output"].count, by_type["output"].sum) == (2, 15 + 9)
    assert {**_attributes(by_type["input"]), "gen_ai.token.type": None} == {
        **MODEL,
        "gen_ai.token.type": None,
    }
    assert by_type["input"].explicit_bounds[:3] == (1.0, 4.0, 16.0)


async def test_operation_duration_is_a_histogram_in_seconds(tmp_path: Path) -> None:
    unit, points = (await _measured(tmp_path))["gen_ai.client.operation.duration"]
    assert unit == "s"
    (point,) = points
    assert _attributes(point) == MODEL
    assert point.count == 2 and 0 <= point.sum < 10
    assert point.explicit_bounds[0] == 0.01


@pytest.mark.parametrize(
    ("environ", "printed"),
    [
        ({"OTEL_TRACES_EXPORTER": "none"}, False),
        ({"OTEL_TRACES_EXPORTER": "none", "OTEL_METRICS_EXPORTER": "console"}, True),
        ({"OTEL_TRACES_EXPORTER": "console"}, True),
        ({"OTEL_TRACES_EXPORTER": "console", "OTEL_METRICS_EXPORTER": "none"}, False),
    ],
)
def test_metrics_go_where_traces_go_unless_told_otherwise(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    environ: dict[str, str],
    printed: bool,
) -> None:
    monkeypatch.delenv("OTEL_METRICS_EXPORTER", raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    provider, owned = meter_provider_from_env()
    assert owned
    metrics = GenAiMetrics(provider, owned=owned)
    metrics.model_call({"provider": "p", "model": "m", "status": "ok", "duration_ms": 5.0})
    metrics.close()
    captured = capsys.readouterr()
    assert captured.out == ""
    assert ("gen_ai.client.operation.duration" in captured.err) is printed


def test_an_unknown_metrics_exporter_is_one_readable_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "nonsense")
    with pytest.raises(ObserveError, match="OTEL_METRICS_EXPORTER='nonsense'"):
        meter_provider_from_env()
