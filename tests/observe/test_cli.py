"""``kun run --log-json`` as a user runs it (a real process, a real provider
on 127.0.0.1): the day's file under the home gets the turn's lines, the
provider's key is nowhere in them; tracing asked for without its exporter
is one readable line."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec
import pytest

from kun.model.scripted import tool_reply
from kun.testing.fake_provider import FakeProvider, FakeResponse
from tests.test_cli_run import ANSWER, _config, _kun, _workspace

pytestmark = pytest.mark.anyio

KEY = "sk-fake-provider-key-for-logs-7731"


def _keyed(config: Path) -> Path:
    config.write_text(config.read_text() + 'api_key_env = "FAKE_LOGS_KEY"\n')
    return config


async def test_kun_run_log_json_writes_the_days_file(tmp_path: Path) -> None:
    workspace = _workspace(tmp_path)
    (workspace / "a.py").write_text(f"print('{KEY}')\n")
    script = [FakeResponse(chunks=tuple(tool_reply("read_file", {"path": "a.py"}))), ANSWER]
    home = tmp_path / "home"
    async with FakeProvider(script, format="chat_completions") as provider:
        config = _keyed(_config(tmp_path, provider.base_url))
        code, _, err = await _kun(
            "run", "what does a.py print in Zanzibar?", "--log-json",
            "--config", str(config), "--home", str(home), "--workspace", str(workspace),
            env={"FAKE_LOGS_KEY": KEY},
        )  # fmt: skip
    assert code == 0, err
    (path,) = (home / "logs").iterdir()
    assert path.name == f"kun-{datetime.now(UTC):%Y%m%d}.jsonl"
    text = path.read_text()
    records = [msgspec.json.decode(line) for line in text.splitlines()]
    assert [r["kind"] for r in records] == ["model_call", "tool_call", "model_call", "turn"]
    assert records[0]["provider"] == "fake" and records[0]["model"] == "fake-model"
    assert records[1]["tool"] == "read_file" and records[1]["output_bytes"] > 0
    assert records[-1]["status"] == "completed"
    assert KEY not in text and "Zanzibar" not in text


async def test_log_content_to_stderr_is_scrubbed(tmp_path: Path) -> None:
    workspace = _workspace(tmp_path)
    (workspace / "a.py").write_text(f"print('{KEY}')\n")
    script = [FakeResponse(chunks=tuple(tool_reply("read_file", {"path": "a.py"}))), ANSWER]
    async with FakeProvider(script, format="chat_completions") as provider:
        config = _keyed(_config(tmp_path, provider.base_url))
        code, _, err = await _kun(
            "run", f"what does a.py print in Zanzibar? {KEY}",
            "--log-json-to", "stderr", "--log-content",
            "--config", str(config), "--home", str(tmp_path / "home"),
            "--workspace", str(workspace),
            env={"FAKE_LOGS_KEY": KEY},
        )  # fmt: skip
    assert code == 0, err
    lines = [line for line in err.splitlines() if line.startswith('{"ts"')]
    assert len(lines) == 4
    assert "Zanzibar? [redacted]" in lines[0]
    assert "print('[redacted]')" in lines[1]
    assert KEY not in err
    assert not (tmp_path / "home" / "logs").exists()


async def test_tracing_over_otlp_without_the_exporter_is_one_line(tmp_path: Path) -> None:
    pytest.importorskip("opentelemetry.sdk")
    try:
        import opentelemetry.exporter.otlp.proto.http.trace_exporter  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("the OTLP exporter is installed here")
    async with FakeProvider([ANSWER], format="chat_completions") as provider:
        code, _, err = await _kun(
            "run", "hi",
            "--config", str(_config(tmp_path, provider.base_url)),
            "--home", str(tmp_path / "home"), "--workspace", str(_workspace(tmp_path)),
            env={"KUN_OTEL": "1", "OTEL_TRACES_EXPORTER": "otlp"},
        )  # fmt: skip
        assert not provider.requests
    assert code == 1
    assert err.strip().splitlines() == [
        "kun: error: tracing exports over OTLP, but opentelemetry-exporter-otlp-proto-http is "
        "not installed: pip install opentelemetry-exporter-otlp-proto-http "
        "(or set OTEL_TRACES_EXPORTER=console)"
    ]


async def test_kun_run_exports_its_spans_to_the_console_exporter(tmp_path: Path) -> None:
    pytest.importorskip("opentelemetry.sdk")
    script = [FakeResponse(chunks=tuple(tool_reply("read_file", {"path": "a.py"}))), ANSWER]
    async with FakeProvider(script, format="chat_completions") as provider:
        code, out, err = await _kun(
            "run", "what does a.py print?", "--json",
            "--config", str(_config(tmp_path, provider.base_url)),
            "--home", str(tmp_path / "home"), "--workspace", str(_workspace(tmp_path)),
            env={"KUN_OTEL": "1", "OTEL_TRACES_EXPORTER": "console"},
        )  # fmt: skip
    assert code == 0, err
    for line in out.splitlines():
        msgspec.json.decode(line)  # stdout is only the events
    spans = _console_spans(err)
    by_name = {span["name"]: span for span in spans}
    assert sorted(by_name) == ["chat fake-model", "execute_tool read_file", "invoke_agent kun"]
    turn = by_name["invoke_agent kun"]
    assert turn["parent_id"] is None
    for name in ("chat fake-model", "execute_tool read_file"):
        assert by_name[name]["parent_id"] == turn["context"]["span_id"]
    assert by_name["chat fake-model"]["attributes"]["gen_ai.request.model"] == "fake-model"
    assert turn["resource"]["attributes"]["service.name"] == "kun"


def _console_spans(err: str) -> list[dict[str, Any]]:
    """The JSON objects the console exporter wrote among the other lines."""
    decoder = json.JSONDecoder()
    spans, at = [], err.find("{")
    while at != -1:
        value, end = decoder.raw_decode(err, at)
        if isinstance(value, dict) and "span_id" in value.get("context", {}):
            spans.append(value)
        at = err.find("{", end)
    return spans
