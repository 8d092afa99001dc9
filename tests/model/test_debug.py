"""The debug recorder: the last 25 rounds, in memory only, nothing when off."""

from __future__ import annotations

from pathlib import Path

import anyio
import msgspec
import pytest

from kun.contracts.model import CompletedChunk, ErrorChunk, ModelStreamChunk
from kun.model.debug import DebugRecorder, DebugRound
from kun.model.reading import CallStats
from tests.model.fake_http import REQUEST, Script, Stream, client, collect, json_answer, split, sse
from tests.model.support import fixture

pytestmark = pytest.mark.anyio

KEY = "sk-test-key-0001"


class CountingObserver:
    """An observer that wants to be told nothing, counting the asks."""

    def __init__(self) -> None:
        self.starts = 0

    def start(self, provider: str, model: str, url: str, redactor: object = None) -> None:
        self.starts += 1


async def test_a_round_holds_the_raw_request_the_raw_response_and_the_chunks() -> None:
    body = fixture("cc_plain_text.sse")
    script = Script(sse(body))
    recorder = DebugRecorder(enabled=True)
    chunks = await collect(client(script, observer=recorder))
    (round_,) = recorder.rounds()
    assert round_.requests == (script.requests[0].content,)
    assert b"".join(round_.frames) == body
    assert round_.chunks == tuple(chunks)
    assert isinstance(round_.chunks[-1], CompletedChunk)
    assert (round_.seq, round_.provider, round_.model) == (1, "example", "model-x")
    assert round_.url == "https://api.example.test/v1/chat/completions"
    assert round_.done and not round_.truncated
    assert isinstance(round_.stats, CallStats) and round_.stats.outcome == "completed"


async def test_keeps_the_last_25_rounds_dropping_the_oldest() -> None:
    recorder = DebugRecorder(enabled=True)
    model = client(Script(sse(fixture("cc_plain_text.sse"))), observer=recorder)
    for _ in range(30):
        await collect(model)
    rounds = recorder.rounds()
    assert recorder.capacity == 25
    assert [r.seq for r in rounds] == list(range(6, 31))


async def test_nothing_is_recorded_when_off_and_the_flag_is_read_once_per_call() -> None:
    recorder = DebugRecorder()
    model = client(Script(sse(Stream(split(fixture("cc_plain_text.sse"), 7)))), observer=recorder)
    await collect(model)
    assert recorder.rounds() == ()
    counting = CountingObserver()
    chunks = await collect(
        client(Script(sse(Stream(split(fixture("cc_plain_text.sse"), 7)))), observer=counting)
    )
    assert counting.starts == 1
    assert isinstance(chunks[-1], CompletedChunk)


async def test_switching_on_takes_effect_at_the_next_call() -> None:
    recorder = DebugRecorder()
    model = client(Script(sse(fixture("cc_plain_text.sse"))), observer=recorder)
    await collect(model)
    recorder.enabled = True
    await collect(model.with_thinking("high"))
    recorder.enabled = False
    await collect(model)
    assert [r.seq for r in recorder.rounds()] == [1]
    recorder.clear()
    assert recorder.rounds() == ()


async def test_a_resend_and_the_error_body_are_recorded() -> None:
    error = json_answer(503, {"error": {"message": "busy"}})
    script = Script(error, sse(fixture("cc_plain_text.sse")))
    recorder = DebugRecorder(enabled=True)
    await collect(client(script, observer=recorder))
    (round_,) = recorder.rounds()
    assert len(round_.requests) == 1  # the same bytes twice are kept once
    assert b"busy" in round_.frames[0]
    assert round_.stats is not None and round_.stats.attempts == 2


async def test_a_failed_call_records_its_final_error_chunk() -> None:
    script = Script(json_answer(401, {"error": {"message": "bad key"}}))
    recorder = DebugRecorder(enabled=True)
    chunks = await collect(client(script, observer=recorder))
    (round_,) = recorder.rounds()
    assert round_.chunks == tuple(chunks)
    assert isinstance(round_.chunks[-1], ErrorChunk)


async def test_concurrent_calls_record_separate_rounds() -> None:
    recorder = DebugRecorder(enabled=True)
    bodies = {n: fixture(n) for n in ("cc_plain_text.sse", "cc_tool_call_fragments.sse")}
    results: dict[int, list[ModelStreamChunk]] = {}

    async def one(i: int) -> None:
        name = list(bodies)[i % 2]
        model = client(Script(sse(Stream(split(bodies[name], 5)))), observer=recorder)
        results[i] = await collect(model)

    async with anyio.create_task_group() as tg:
        for i in range(10):
            tg.start_soon(one, i)
    rounds = recorder.rounds()
    assert len(rounds) == 10
    for round_ in rounds:
        assert b"".join(round_.frames) in bodies.values()
        assert round_.chunks in [tuple(chunks) for chunks in results.values()]


async def test_a_round_is_visible_while_its_call_runs() -> None:
    recorder = DebugRecorder(enabled=True)
    model = client(Script(sse(fixture("cc_plain_text.sse"))), observer=recorder)
    stream = model.stream(REQUEST)
    first = await anext(stream)
    (running,) = recorder.rounds()
    assert not running.done and running.stats is None
    assert running.chunks == (first,)
    await stream.aclose()
    (finished,) = recorder.rounds()
    assert finished.done and finished.stats is not None


async def test_snapshots_are_frozen() -> None:
    recorder = DebugRecorder(enabled=True)
    await collect(client(Script(sse(fixture("cc_plain_text.sse"))), observer=recorder))
    (round_,) = recorder.rounds()
    assert isinstance(round_, DebugRound)
    with pytest.raises(AttributeError):
        round_.frames = ()  # type: ignore[misc]


async def test_no_secret_is_recorded() -> None:
    recorder = DebugRecorder(enabled=True)
    base_url = "https://api.example.test/v1?api_key=query-secret-999"
    await collect(
        client(Script(sse(fixture("cc_plain_text.sse"))), base_url=base_url, observer=recorder)
    )
    (round_,) = recorder.rounds()
    recorded = msgspec.json.encode(round_)
    assert KEY.encode() not in recorded
    assert b"query-secret-999" not in recorded
    assert "api_key=[redacted]" in round_.url


async def test_a_round_over_its_byte_budget_is_truncated() -> None:
    body = fixture("cc_plain_text.sse")
    recorder = DebugRecorder(enabled=True, max_round_bytes=100)
    await collect(client(Script(sse(Stream(split(body, 30)))), observer=recorder))
    (round_,) = recorder.rounds()
    assert round_.truncated
    assert b"".join(round_.frames) == body[:100]


async def test_nothing_is_written_to_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home, kun_home, cwd = tmp_path / "home", tmp_path / "kun-home", tmp_path / "cwd"
    for directory in (home, kun_home, cwd):
        directory.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("KUN_HOME", str(kun_home))
    monkeypatch.chdir(cwd)
    recorder = DebugRecorder(enabled=True)
    model = client(Script(sse(fixture("cc_plain_text.sse"))), observer=recorder)
    for _ in range(3):
        await collect(model)
    assert len(recorder.rounds()) == 3
    assert tree(tmp_path) == ["cwd/", "home/", "kun-home/"]


def tree(root: Path) -> list[str]:
    """Every path under ``root``, directories with a trailing slash."""
    return sorted(f"{p.relative_to(root)}{'/' if p.is_dir() else ''}" for p in root.rglob("*"))


def test_capacity_must_be_positive() -> None:
    with pytest.raises(ValueError, match="capacity"):
        DebugRecorder(capacity=0)


@pytest.mark.parametrize("size", [1, 3, 7, 1000])
async def test_a_401_body_echoing_the_key_is_scrubbed_even_cut_in_pieces(size: int) -> None:
    body = msgspec.json.encode({"error": {"message": f"Incorrect API key provided: {KEY}"}})
    script = Script(sse(Stream(split(body, size)), status=401))
    recorder = DebugRecorder(enabled=True)
    await collect(client(script, observer=recorder))
    (round_,) = recorder.rounds()
    frames = b"".join(round_.frames)
    assert KEY.encode() not in frames
    assert frames == body.replace(KEY.encode(), b"[redacted]")


async def test_a_key_echoed_by_the_model_or_sent_in_the_prompt_is_scrubbed() -> None:
    answer = fixture("cc_plain_text.sse").replace(b"Hello", KEY.encode())
    script = Script(sse(Stream(split(answer, 5))))
    recorder = DebugRecorder(enabled=True)
    request = msgspec.structs.replace(
        REQUEST, history=(msgspec.structs.replace(REQUEST.history[0], text=f"my key {KEY}"),)
    )
    chunks = await collect(client(script, observer=recorder), request)
    assert any(KEY in msgspec.json.encode(chunk).decode() for chunk in chunks)
    (round_,) = recorder.rounds()
    recorded = msgspec.json.encode(round_)
    assert KEY.encode() not in recorded
    assert KEY.encode() not in b"".join(round_.requests + round_.frames)
    assert b"[redacted]" in b"".join(round_.requests)
    assert any("[redacted]" in msgspec.json.encode(chunk).decode() for chunk in round_.chunks)


async def test_a_running_round_never_shows_a_key_cut_in_two() -> None:
    body = fixture("cc_plain_text.sse").replace(b"Hello", KEY.encode())
    recorder = DebugRecorder(enabled=True)
    stream = client(Script(sse(Stream(split(body, 3)))), observer=recorder).stream(REQUEST)
    seen = 0
    async for _ in stream:
        (running,) = recorder.rounds()
        joined = b"".join(running.frames)
        assert KEY[:8].encode() not in joined
        seen += 1
    assert seen > 2
