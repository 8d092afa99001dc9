"""Where the lines go and what turns them on: ``[observability]``, then the
environment, then the flags; files a day under the home, private."""

from __future__ import annotations

import stat
import sys
from pathlib import Path

import msgspec
import pytest

from kun.config.schema import ObservabilityTable
from kun.observe.errors import ObserveError
from kun.observe.settings import ObserveSettings, resolve
from kun.observe.setup import observer_for
from kun.observe.sink import DailyFiles, FileSink, StderrSink, open_sink


def test_off_unless_something_turns_it_on() -> None:
    assert resolve(None, {}, {}) == ObserveSettings()
    assert not ObserveSettings().active
    assert observer_for(ObserveSettings(), Path("/nonexistent")) is None


def test_flags_over_environment_over_the_file() -> None:
    table = ObservabilityTable(log="file", otel=False)
    assert resolve(table, {}, {}).log == "file"
    env = {"KUN_LOG_JSON": "stderr", "KUN_LOG_CONTENT": "1", "KUN_OTEL": "true"}
    assert resolve(table, env, {}) == ObserveSettings(log="stderr", content=True, otel=True)
    flagged = resolve(table, env, {"log": "/tmp/x.jsonl"})
    assert flagged.log == "/tmp/x.jsonl"
    assert resolve(None, {}, {"log_content": True}).content


def test_daily_files_under_the_home_are_private_and_appended(tmp_path: Path) -> None:
    sink = open_sink("file", tmp_path)
    assert isinstance(sink, DailyFiles)
    sink.write({"ts": "2026-12-01T23:59:59.999Z", "kind": "turn"})
    sink.write({"ts": "2026-12-02T00:00:00.000Z", "kind": "turn", "n": 1})
    sink.write({"ts": "2026-12-02T00:00:01.000Z", "kind": "turn", "n": 2})
    sink.close()
    logs = tmp_path / "logs"
    assert sorted(p.name for p in logs.iterdir()) == ["kun-20261201.jsonl", "kun-20261202.jsonl"]
    second = (logs / "kun-20261202.jsonl").read_bytes().splitlines()
    assert [msgspec.json.decode(line)["n"] for line in second] == [1, 2]
    assert stat.S_IMODE(logs.stat().st_mode) == 0o700
    assert stat.S_IMODE((logs / "kun-20261201.jsonl").stat().st_mode) == 0o600
    again = open_sink("file", tmp_path)
    assert again is not None
    again.write({"ts": "2026-12-02T00:00:02.000Z", "kind": "turn", "n": 3})
    again.close()
    assert len((logs / "kun-20261202.jsonl").read_bytes().splitlines()) == 3


def test_a_named_file_or_stderr(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    named = open_sink(str(tmp_path / "sub" / "kun.jsonl"), tmp_path)
    assert isinstance(named, FileSink)
    named.write({"ts": "x", "kind": "turn"})
    named.close()
    assert (tmp_path / "sub" / "kun.jsonl").read_text() == '{"ts":"x","kind":"turn"}\n'
    err = open_sink("stderr", tmp_path)
    assert isinstance(err, StderrSink)
    err.write({"kind": "turn"})
    assert capsys.readouterr().err == '{"kind":"turn"}\n'
    assert open_sink("off", tmp_path) is None


def test_tracing_without_the_sdk_is_one_readable_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry.sdk.resources", None)
    with pytest.raises(ObserveError, match=r"SDK is not installed: pip install 'kun\[otel\]'"):
        observer_for(ObserveSettings(otel=True), tmp_path)
    monkeypatch.setitem(sys.modules, "opentelemetry", None)
    monkeypatch.delitem(sys.modules, "kun.observe.otel", raising=False)
    with pytest.raises(ObserveError, match=r"OpenTelemetry is not installed: pip install"):
        observer_for(ObserveSettings(otel=True), tmp_path)


def test_tracing_over_otlp_without_its_exporter_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("opentelemetry.sdk")
    monkeypatch.setitem(sys.modules, "opentelemetry.exporter.otlp.proto.http.trace_exporter", None)
    monkeypatch.delenv("OTEL_TRACES_EXPORTER", raising=False)
    with pytest.raises(ObserveError, match="pip install opentelemetry-exporter-otlp-proto-http"):
        observer_for(ObserveSettings(otel=True), tmp_path)
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "zipkin")
    with pytest.raises(ObserveError, match="otlp, console and none"):
        observer_for(ObserveSettings(otel=True), tmp_path)
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "console")
    observer = observer_for(ObserveSettings(otel=True), tmp_path)
    assert observer is not None and observer.spans is not None
    observer.close()
