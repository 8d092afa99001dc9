"""``kun serve --log-json``: the turns the server runs are logged to the
day's file under its home (the flag reaches a service that starts inside
the server); tracing asked for without its exporter is one line at start."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from kun.testing.fake_provider import FakeProvider
from tests.server.test_serve import (
    ANSWER,
    _config,
    _environ,
    _serve,
    _until,
    _wait_settled,
    _workspace,
)

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def test_kun_serve_log_json_logs_the_turns_it_runs(tmp_path: Path) -> None:
    async with FakeProvider([ANSWER], format="chat_completions") as provider:
        async with _serve(tmp_path, provider.base_url, "--log-json") as (_, client):
            created = await client.post("/v1/threads", json={"workspace": _workspace(tmp_path)})
            thread = created.json()["thread_id"]
            started = await client.post(f"/v1/threads/{thread}/turns", json={"text": "a.py?"})
            turn = await _wait_settled(client, thread, started.json()["turn_id"])
            assert turn["status"] == "completed"
            logs = tmp_path / "home" / "logs"
            await _until(lambda: logs.exists() and "turn" in _kinds(logs))
    assert _kinds(logs) == ["model_call", "turn"]


def _kinds(logs: Path) -> list[str]:
    lines = b"".join(p.read_bytes() for p in sorted(logs.iterdir())).splitlines()
    return [msgspec.json.decode(line)["kind"] for line in lines]


def test_kun_serve_with_tracing_it_cannot_export_is_one_line(tmp_path: Path) -> None:
    pytest.importorskip("opentelemetry.sdk")
    env = _environ({"KUN_OTEL": "1", "OTEL_TRACES_EXPORTER": "nonsense"})
    done = subprocess.run(
        [sys.executable, "-m", "kun", "serve", "--port", "0", "--home", str(tmp_path / "h"),
         "--config", str(_config(tmp_path, "http://127.0.0.1:9/v1"))],
        env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "kun: error: OTEL_TRACES_EXPORTER='nonsense': kun knows otlp, console and none"
    ]
