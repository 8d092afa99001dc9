"""The JSON lines of a real turn: one per model call, tool call and turn,
with ids, timings, tokens and cost, and never a prompt, an output or a
secret unless content is asked for (then scrubbed)."""

from __future__ import annotations

import re
from pathlib import Path

import anyio
import msgspec
import pytest

from kun.contracts.model import TextDeltaChunk, UsageChunk
from kun.model.scripted import ScriptedModelClient, text_reply
from kun.observe.observer import Observer
from tests.observe.support import (
    PROMPT,
    REPLY,
    SECRET,
    Lines,
    observed,
    run_turn,
    script,
    until,
    usage,
)

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def _secret_in_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUN_FAKE_API_KEY", SECRET)


async def test_a_turn_logs_its_model_calls_tool_call_and_itself(tmp_path: Path) -> None:
    lines = Lines()
    async with observed(tmp_path, Observer(sink=lines)) as (service, thread_id):
        turn = await run_turn(service, thread_id)
    assert turn.status == "completed"
    assert [r["kind"] for r in lines.records] == ["model_call", "tool_call", "model_call", "turn"]
    first, tool, second, whole = lines.records
    for record in lines.records:
        assert record["thread_id"] == thread_id
        assert record["turn_id"] == turn.turn_id
        assert record["ts"].endswith("Z")
    assert first["provider"] == "scripted"
    assert first["model"] == service.model.model
    assert first["response_model"] == "scripted-1-20261201"
    assert (first["step"], first["call"], second["step"], second["call"]) == (0, 1, 1, 2)
    assert first["status"] == "ok" and first["stop_reason"] == "tool_calls"
    assert first["tool_calls"] == 1 and second["tool_calls"] == 0
    assert (first["input_tokens"], first["output_tokens"], first["cost_usd"]) == (120, 15, 0.0012)
    assert 0 <= first["ttfb_ms"] <= first["duration_ms"]
    assert tool["tool"] == "peek" and tool["effect"] == "read" and tool["step"] == 0
    assert tool["call_id"] == "call_peek" and tool["status"] == "ok"
    assert tool["output_bytes"] == len(b"FAKE_API_KEY=[redacted] what=env")
    assert tool["duration_ms"] >= 0
    assert whole["status"] == "completed"
    assert (whole["model_calls"], whole["tool_calls"]) == (2, 1)
    assert (whole["input_tokens"], whole["output_tokens"]) == (300, 24)
    assert whole["cost_usd"] == pytest.approx(0.0033)


async def test_without_content_no_prompt_reply_arguments_or_secret(tmp_path: Path) -> None:
    lines = Lines()
    async with observed(tmp_path, Observer(sink=lines)) as (service, thread_id):
        await run_turn(service, thread_id, f"{PROMPT} (key {SECRET})")
    text = msgspec.json.encode(lines.records).decode()
    assert "Zanzibar" not in text
    assert SECRET not in text
    assert '"env"' not in text and "what=" not in text
    for record in lines.records:
        assert not {"input", "output", "arguments", "system_prompt", "calls"} & set(record)


async def test_with_content_the_prompt_and_outputs_are_there_scrubbed(tmp_path: Path) -> None:
    lines = Lines()
    observer = Observer(sink=lines, content=True)
    async with observed(tmp_path, observer) as (service, thread_id):
        await run_turn(service, thread_id, f"{PROMPT} (key {SECRET})")
    text = msgspec.json.encode(lines.records).decode()
    assert SECRET not in text
    first, tool, second, _ = lines.records
    assert f"{PROMPT} (key [redacted])" in msgspec.json.encode(first["input"]).decode()
    assert first["calls"] == [
        {"call_id": "call_peek", "name": "peek", "arguments": '{"what":"env"}'}
    ]
    assert tool["arguments"] == '{"what":"env"}'
    assert tool["output"] == "FAKE_API_KEY=[redacted] what=env"
    assert second["output"] == REPLY
    new = msgspec.json.encode(second["input"]).decode()
    assert "Zanzibar quarterly" not in new, "a later call logs only what is new since the last"
    assert "[redacted]" in new


async def test_the_event_log_is_the_same_with_the_observer_on(tmp_path: Path) -> None:
    async def logged(path: Path, observer: Observer | None) -> list[str]:
        async with observed(path, observer) as (service, thread_id):
            await run_turn(service, thread_id)
            events = service.recorder.store.read(thread_id)
            return [_stable(e, path) for e in events]

    on = await logged(tmp_path / "on", Observer(sink=Lines(), content=True))
    off = await logged(tmp_path / "off", None)
    assert len(on) > 8
    assert on == off


def _stable(event: object, path: Path) -> str:
    """An event without what differs from run to run (times, generated ids,
    the directory)."""
    record = msgspec.json.decode(msgspec.json.encode(event))
    record.pop("at")
    text = msgspec.json.encode(record).decode().replace(str(path), "<dir>")
    return re.sub(r"\b([a-z]+)_[0-9a-z]{12,}\b", r"\1_<id>", text)


async def test_an_interrupted_turn_logs_its_cut_call_and_ends(tmp_path: Path) -> None:
    from kun.contracts.threads import ThreadSettings
    from kun.model.scripted import ScriptedModelClient
    from kun.runtime.recorder import EventRecorder
    from kun.runtime.service import TurnService
    from kun.store.memory import MemoryEventStore
    from kun.tools.host import ToolHost

    lines = Lines()
    observer = Observer(sink=lines)
    model = ScriptedModelClient([[TextDeltaChunk(text="x")] * 1000], delay=0.01)
    store = MemoryEventStore()
    async with store, EventRecorder(store) as recorder, anyio.create_task_group() as tg:
        tools = observer.watch(ToolHost([]))
        service = TurnService(recorder, tg, model=model, tools=tools, hooks=(observer,))
        thread_id = await service.create_thread(ThreadSettings(workspace=str(tmp_path)))
        turn_id = await service.start_turn(thread_id, PROMPT)
        await until(lambda: len(service.state(thread_id).turns[-1].items) >= 2)
        await service.interrupt_turn(thread_id, turn_id)
        await service.wait_turn(thread_id, turn_id)
        await until(lambda: lines.of("turn"))
        tg.cancel_scope.cancel()
    (call,) = lines.of("model_call")
    assert call["status"] == "cancelled" and "stop_reason" not in call
    assert call["ttfb_ms"] is not None and call["duration_ms"] >= call["ttfb_ms"]
    (turn,) = lines.of("turn")
    assert turn["status"] == "aborted" and turn["model_calls"] == 1


def _priced(*costs: float | None) -> ScriptedModelClient:
    """A turn of a tool call and an answer whose calls cost ``costs``."""
    first, second = script()
    first = [usage(120, 15, costs[0]) if isinstance(c, UsageChunk) else c for c in first]
    second = [usage(180, 9, costs[1]) if isinstance(c, UsageChunk) else c for c in second]
    return ScriptedModelClient([first, second])


@pytest.mark.parametrize(
    ("costs", "turn_cost", "unpriced"),
    [
        ((None, None), None, 2),
        ((0.0012, None), 0.0012, 1),
        ((0.0012, 0.0021), 0.0033, 0),
        ((0.0, 0.0), 0.0, 0),
    ],
)
async def test_the_turn_cost_is_null_when_no_call_had_a_price(
    tmp_path: Path, costs: tuple[float | None, ...], turn_cost: float | None, unpriced: int
) -> None:
    lines = Lines()
    async with observed(tmp_path, Observer(sink=lines), model=_priced(*costs)) as (s, thread):
        await run_turn(s, thread)
    calls = lines.of("model_call")
    (turn,) = lines.of("turn")
    assert [c["cost_usd"] for c in calls] == list(costs)
    assert turn["cost_usd"] == (None if turn_cost is None else pytest.approx(turn_cost))
    assert turn["unpriced_calls"] == unpriced


async def test_a_call_without_usage_leaves_the_turn_cost_unknown(tmp_path: Path) -> None:
    lines = Lines()
    model = ScriptedModelClient([text_reply("no usage reported")])
    async with observed(tmp_path, Observer(sink=lines), model=model) as (service, thread_id):
        await run_turn(service, thread_id)
    (call,) = lines.of("model_call")
    (turn,) = lines.of("turn")
    assert "cost_usd" not in call
    assert turn["cost_usd"] is None and turn["unpriced_calls"] == 1
