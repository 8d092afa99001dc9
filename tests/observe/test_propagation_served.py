"""W3C trace context end to end: a real ``kun serve`` with tracing on
(``KUN_OTEL=1``, the SDK's console exporter on its stderr) is sent a
``traceparent`` with ``POST /v1/threads/{id}/turns``; the turn span it
exports is a child of the caller's span, in the caller's trace (the
in-process version is tests/observe/test_propagation.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

pytest.importorskip("opentelemetry.sdk")

from tests.test_cli_remote import ANSWER, serving

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER = "00f067aa0ba902b7"
TURN_SPAN = "invoke_agent kun"


def _spans(text: str) -> list[dict[str, Any]]:
    """The console exporter's spans: JSON objects, each opening on a line of
    its own; anything else the server wrote (its log lines) is skipped."""
    decoder = json.JSONDecoder()
    found = []
    start = text.find("{\n")
    while start != -1:
        try:
            value, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            end = start + 1
        else:
            if isinstance(value, dict) and "context" in value:
                found.append(value)
        start = text.find("{\n", end)
    return found


async def _exported(out: Path, name: str) -> list[dict[str, Any]]:
    """The spans called ``name`` once the server's batch has written any."""
    while True:
        found = [s for s in _spans(await anyio.Path(out).read_text()) if s["name"] == name]
        if found:
            return found
        await anyio.sleep(0.05)


async def test_a_served_turn_span_is_the_callers_child(tmp_path: Path) -> None:
    env = {"KUN_OTEL": "1", "OTEL_TRACES_EXPORTER": "console", "OTEL_BSP_SCHEDULE_DELAY": "50"}
    async with serving(tmp_path, [ANSWER], **env) as s, httpx.AsyncClient(base_url=s.url) as c:
        created = await c.post("/v1/threads", json={"workspace": str(s.workspace)})
        thread_id = created.json()["thread_id"]
        header = {"traceparent": f"00-{TRACE}-{CALLER}-01"}
        started = await c.post(
            f"/v1/threads/{thread_id}/turns", json={"text": "hi"}, headers=header
        )
        assert started.status_code == 202, started.text
        out = tmp_path / "serve.out"
        with anyio.fail_after(20):
            turns = await _exported(out, TURN_SPAN)
        spans = _spans(await anyio.Path(out).read_text())
    (turn,) = turns
    assert turn["parent_id"] == f"0x{CALLER}"
    assert turn["context"]["trace_id"] == f"0x{TRACE}"
    assert turn["attributes"]["gen_ai.conversation.id"] == thread_id
    calls = [s for s in spans if s["name"].startswith("chat ")]
    assert calls and all(s["parent_id"] == turn["context"]["span_id"] for s in calls)
