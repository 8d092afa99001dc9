"""Big tool outputs in side files, through real turns (issue 10, item 6).

The model is a real HTTP client talking to the loopback provider, so "the
model is sent the whole output" is checked on the request body it received.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest

from kun.contracts import events as ev
from kun.contracts.items import BlobRef, ToolResult
from kun.contracts.model import CompletedChunk, TextDeltaChunk
from kun.contracts.threads import ThreadSettings
from kun.domain.state import TurnState
from kun.model.client import HttpModelClient
from kun.runtime.recorder import EventRecorder
from kun.runtime.service import TurnService
from kun.runtime.sidefiles import HEAD_BYTES, SIDE_FILE_THRESHOLD, SideFiles, head
from kun.store import log_path, read_log
from kun.store.blobs import MemoryBlobStore
from kun.store.jsonl import JsonlEventStore
from kun.testing.fake_provider import FakeProvider, FakeResponse
from kun.tools.base import ToolContext, ToolEffect, ToolOutput, make_spec
from tests.cli_support import invoked
from tests.runtime.support import calls, host_with

pytestmark = pytest.mark.anyio

BIG = "".join(f"line {n}: caf\u00e9 \u2028 \U0001f600 {'x' * 40}\n" for n in range(3000))
"""~200 KB of UTF-8 with multi-byte characters and a U+2028 in every line."""


@dataclass
class Printer:
    """A tool that prints whatever text it was asked for, or ``BIG``."""

    name: str = "printer"

    @property
    def spec(self) -> Any:
        return make_spec(self.name, "prints", {"text": {"type": "string"}})

    @property
    def effect(self) -> ToolEffect:
        return "read"

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        return ToolOutput(output=args.get("text") or BIG)


def _answer(text: str) -> FakeResponse:
    return FakeResponse(chunks=(TextDeltaChunk(text=text), CompletedChunk(stop_reason="stop")))


def _print(*texts: str, prefix: str = "c") -> FakeResponse:
    specs = [("printer", {"text": text}) for text in texts]
    return FakeResponse(chunks=tuple(calls(*specs, prefix=prefix)))


@dataclass
class Env:
    service: TurnService
    provider: FakeProvider
    home: Path
    thread_id: str

    @property
    def log(self) -> Path:
        return log_path(self.home, self.thread_id)

    def blobs(self, thread_id: str | None = None) -> Path:
        return self.home / "threads" / (thread_id or self.thread_id) / "blobs"

    async def run(self, text: str) -> TurnState:
        turn_id = await self.service.start_turn(self.thread_id, text)
        with anyio.fail_after(20):
            return await self.service.wait_turn(self.thread_id, turn_id)

    def results(self, thread_id: str | None = None) -> list[ToolResult]:
        path = log_path(self.home, thread_id or self.thread_id)
        return [
            e.item
            for e in read_log(path)
            if isinstance(e, ev.ItemCompleted) and isinstance(e.item, ToolResult)
        ]

    def tool_contents(self, request: int) -> list[str]:
        body = self.provider.requests[request].json
        return [m["content"] for m in body["messages"] if m["role"] == "tool"]


@asynccontextmanager
async def env(tmp_path: Path, script: Sequence[FakeResponse]) -> AsyncIterator[Env]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    home = tmp_path / "home"
    async with FakeProvider(list(script), format="chat_completions") as provider:
        client = HttpModelClient("fake", "fake-model", provider.base_url, "chat_completions")
        store = JsonlEventStore(home)
        async with client, store, EventRecorder(store) as recorder:
            async with anyio.create_task_group() as tg:
                service = TurnService(recorder, tg, model=client, tools=host_with(Printer()))
                settings = ThreadSettings(workspace=str(workspace), approval_policy="full-auto")
                thread_id = await service.create_thread(settings)
                try:
                    yield Env(service, provider, home, thread_id)
                finally:
                    tg.cancel_scope.cancel()


async def test_a_big_output_goes_to_a_side_file_and_reaches_the_model_whole(
    tmp_path: Path,
) -> None:
    data = BIG.encode()
    assert len(data) > SIDE_FILE_THRESHOLD
    async with env(tmp_path, [_print(""), _answer("done")]) as e:
        turn = await e.run("print it")
        assert turn.status == "completed", turn
        assert e.tool_contents(1) == [BIG]
        (result,) = e.results()
        ref = result.output_ref
        assert ref is not None
        assert (ref.sha256, ref.size) == (hashlib.sha256(data).hexdigest(), len(data))
        assert result.output == head(BIG) and len(result.output.encode()) <= HEAD_BYTES
        assert (e.blobs() / ref.sha256).read_bytes() == data
        assert max(len(line) for line in e.log.read_bytes().split(b"\n")) < 4 * HEAD_BYTES
        live = e.service.state(e.thread_id).turns[0].items
        assert [i.output_ref for i in live if isinstance(i, ToolResult)] == [ref]


async def test_small_outputs_stay_in_the_line(tmp_path: Path) -> None:
    async with env(tmp_path, [_print("short"), _answer("done")]) as e:
        assert (await e.run("print it")).status == "completed"
        assert [(r.output, r.output_ref) for r in e.results()] == [("short", None)]
        assert e.tool_contents(1) == ["short"]
        assert not e.blobs().exists()
        assert b"output_ref" not in e.log.read_bytes()


async def test_the_same_content_is_stored_once(tmp_path: Path) -> None:
    other = BIG.replace("x", "y")
    script = [_print(BIG, BIG, other), _print("", prefix="d"), _answer("done")]
    async with env(tmp_path, script) as e:
        assert (await e.run("print them")).status == "completed"
        refs = [r.output_ref for r in e.results()]
        assert None not in refs and len(refs) == 4
        assert refs[0] == refs[1] == refs[3] != refs[2]
        assert sorted(p.name for p in e.blobs().iterdir()) == sorted(
            {r.sha256 for r in refs if r is not None}
        )
        assert e.tool_contents(1) == [BIG, BIG, other]
        assert e.tool_contents(2) == [BIG, BIG, other, BIG]


async def test_the_side_file_is_durable_before_the_event_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[str, bool]] = []
    append = JsonlEventStore.append

    async def checked(
        self: JsonlEventStore, thread_id: str, events: Sequence[ev.Event], **kw: Any
    ) -> int:
        for event in events:
            item = getattr(event, "item", None)
            if isinstance(item, ToolResult) and item.output_ref is not None:
                path = self.home / "threads" / thread_id / "blobs" / item.output_ref.sha256
                whole = path.is_file() and path.stat().st_size == item.output_ref.size
                seen.append((item.output_ref.sha256, whole))
        return await append(self, thread_id, events, **kw)

    monkeypatch.setattr(JsonlEventStore, "append", checked)
    async with env(tmp_path, [_print(""), _answer("done")]) as e:
        assert (await e.run("print it")).status == "completed"
    assert seen == [(hashlib.sha256(BIG.encode()).hexdigest(), True)]


@pytest.mark.parametrize("damage", ["missing", "altered"])
async def test_an_unreadable_side_file_fails_the_next_turn_naming_it(
    tmp_path: Path, damage: str
) -> None:
    async with env(tmp_path, [_print(""), _answer("done"), _answer("never")]) as e:
        assert (await e.run("print it")).status == "completed"
        (result,) = e.results()
        assert result.output_ref is not None
        path = e.blobs() / result.output_ref.sha256
        if damage == "missing":
            path.unlink()
        else:
            path.write_bytes(path.read_bytes().replace(b"x", b"X", 1))
        turn = await e.run("and again")
        assert turn.status == "failed"
        assert turn.error is not None and turn.error.code == "side_file_unreadable"
        assert str(path) in turn.error.message and damage in turn.error.message
        assert len(e.provider.requests) == 2


async def test_a_fork_carries_its_side_files(tmp_path: Path) -> None:
    async with env(tmp_path, [_print(""), _answer("done"), _answer("forked")]) as e:
        assert (await e.run("print it")).status == "completed"
        fork = await e.service.fork_thread(e.thread_id)
        shutil.rmtree(e.blobs())
        turn_id = await e.service.start_turn(fork, "go on")
        with anyio.fail_after(20):
            turn = await e.service.wait_turn(fork, turn_id)
        assert turn.status == "completed", turn
        assert e.tool_contents(2) == [BIG]
        assert [r.output_ref for r in e.results(fork)] == [r.output_ref for r in e.results()]


async def test_replay_shows_the_head_and_names_the_side_file_without_reading_it(
    tmp_path: Path,
) -> None:
    async with env(tmp_path, [_print(""), _answer("done")]) as e:
        assert (await e.run("print it")).status == "completed"
        (result,) = e.results()
        shutil.rmtree(e.blobs())
    ref = result.output_ref
    assert ref is not None
    shown = await invoked(["replay", str(e.log)])
    assert shown.exit_code == 0, shown.output
    assert f"| [{-(-ref.size // 1024):,} KB in side file {ref.sha256[:12]}]" in shown.output
    assert "line 0: caf\u00e9" in shown.output and "line 2999" not in shown.output
    as_json = await invoked(["replay", "--json", str(e.log)])
    assert as_json.exit_code == 0, as_json.output
    assert msgspec.to_builtins(ref) in _output_refs(json.loads(as_json.output))


def _output_refs(node: Any) -> list[Any]:
    if isinstance(node, dict):
        found = [node["output_ref"]] if "output_ref" in node else []
        return found + [r for value in node.values() for r in _output_refs(value)]
    if isinstance(node, list):
        return [r for value in node for r in _output_refs(value)]
    return []


def test_a_turn_reads_each_side_file_once() -> None:
    reads: list[str] = []

    class Counting(MemoryBlobStore):
        def get(self, ref: BlobRef) -> bytes:
            reads.append(ref.sha256)
            return super().get(ref)

    blobs = Counting("thr_1")
    ref = blobs.put(BIG.encode())
    items = [ToolResult(id=f"res_{n}", call_id=f"c{n}", output="", output_ref=ref) for n in "ab"]
    side = SideFiles(blobs)
    for _ in range(3):
        assert [r.output for r in side.resolve(items) if isinstance(r, ToolResult)] == [BIG, BIG]
    assert reads == [ref.sha256]


def test_the_head_is_cut_at_a_character_boundary() -> None:
    text = "\U0001f600" * 1000
    cut = head(text, 4 * 10 + 3)
    assert cut == "\U0001f600" * 10
    assert head("short") == "short"
