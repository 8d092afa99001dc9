"""tools/fake_provider.py: serves a script file until SIGTERM."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from kun.contracts.model import CompletedChunk, ReasoningDeltaChunk, TextDeltaChunk
from kun.model.sse import SSEParser
from kun.model.wire import new_decoder

SCRIPT = Path(__file__).resolve().parents[2] / "tools" / "fake_provider.py"


@pytest.mark.slow
def test_serves_a_script_file_in_a_loop(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(
        '[[{"kind": "assistant_text_delta", "text": "Hello"}, {"kind": "completed"}],'
        ' {"status": 429, "retry_after": "1"},'
        ' {"raw_text": "event: message_stop\\ndata: {\\"type\\":\\"message_stop\\"}\\n\\n"}]'
    )
    command: list[str | Path] = [
        sys.executable,
        SCRIPT,
        "--format",
        "messages",
        "--port",
        "0",
        "--script",
        script,
    ]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as proc:
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            assert line.startswith("listening on http://127.0.0.1:"), line
            with httpx.Client(base_url=line.split()[-1], timeout=5) as client:
                answers = [client.post("messages", json={"stream": True}) for _ in range(4)]
        finally:
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=5) == 0
    assert [a.status_code for a in answers] == [200, 429, 200, 200]
    assert answers[1].headers["retry-after"] == "1"
    assert answers[2].content == b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
    decoder = new_decoder("messages")
    chunks = decoder.feed_all(SSEParser().feed(answers[3].content)) + decoder.finish()
    assert chunks == [TextDeltaChunk(text="Hello"), CompletedChunk(stop_reason="stop")]


@pytest.mark.slow
def test_loopback_benchmark_runs() -> None:
    bench = SCRIPT.parent / "bench_loopback.py"
    command: list[str | Path] = [sys.executable, bench, "--chunks", "300", "--repeat", "1"]
    done = subprocess.run(command, capture_output=True, text=True, check=True, timeout=60)
    assert done.stdout.count("kun overhead:") == 2, done.stdout


@pytest.mark.slow
def test_speaks_kimi_when_asked(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(
        '[[{"kind": "assistant_reasoning_delta", "text": "Hm."},'
        ' {"kind": "assistant_text_delta", "text": "Hi"},'
        ' {"kind": "usage", "usage": {"prompt_tokens": 9, "completion_tokens": 1,'
        ' "cache_hit_tokens": 8}},'
        ' {"kind": "completed"}]]'
    )
    command: list[str | Path] = [
        sys.executable, SCRIPT, "--dialect", "kimi", "--port", "0", "--script", script,
    ]  # fmt: skip
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as proc:
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            with httpx.Client(base_url=line.split()[-1], timeout=5) as client:
                answer = client.post("chat/completions", json={"stream": True})
        finally:
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=5) == 0
    assert b'"delta":{"reasoning_content":"Hm."}' in answer.content
    assert b'"cached_tokens":8}' in answer.content
    decoder = new_decoder("chat_completions")
    chunks = decoder.feed_all(SSEParser().feed(answer.content)) + decoder.finish()
    assert chunks[:2] == [ReasoningDeltaChunk(text="Hm."), TextDeltaChunk(text="Hi")]
