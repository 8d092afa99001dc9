"""The model-written title: written in the background while the title is
still automatic and no turn has completed, re-checked before writing."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest

from kun.app.session import open_service
from kun.config.load import parse_config
from kun.contracts import events as ev
from kun.contracts.model import (
    CompletedChunk,
    ErrorChunk,
    ModelRequest,
    ModelStreamChunk,
    TextDeltaChunk,
)
from kun.contracts.threads import ThreadSettings
from kun.model.port import ModelClient
from kun.model.scripted import ScriptedModelClient
from kun.runtime.recorder import EventRecorder
from kun.runtime.service import TurnService
from kun.runtime.titler import TITLE_INSTRUCTION, Titler, title_from_reply
from kun.store.jsonl import JsonlEventStore
from tests.runtime.support import Harness, builtin_host

pytestmark = pytest.mark.anyio

PROMPT = "why does the nightly build fail on arm64 since tuesday?"


class Recording(Titler):
    """A titler whose outcome a test can wait for."""

    def __init__(self) -> None:
        super().__init__()
        self.done = anyio.Event()
        self.written: bool | None = None

    async def __call__(
        self, service: TurnService, thread_id: str, model: ModelClient, prompt: str
    ) -> bool:
        self.written = await super().__call__(service, thread_id, model, prompt)
        self.done.set()
        return self.written


class Script:
    """Answers title requests and turn steps, each after its own gate."""

    def __init__(self, title: list[ModelStreamChunk]) -> None:
        self.title = title
        self.title_gate = anyio.Event()
        self.turn_gate = anyio.Event()
        self.title_requests: list[ModelRequest] = []

    async def __call__(self, request: ModelRequest) -> AsyncIterator[ModelStreamChunk]:
        if request.system_prompt == TITLE_INSTRUCTION:
            self.title_requests.append(request)
            await self.title_gate.wait()
            for chunk in self.title:
                yield chunk
        else:
            await self.turn_gate.wait()
            yield TextDeltaChunk(text="it is the linker")
            yield CompletedChunk(stop_reason="stop")


@asynccontextmanager
async def harness(tmp_path: Path, script: Script) -> AsyncIterator[Harness]:
    """A service whose model answers from ``script`` (title and turn alike)."""
    model = ScriptedModelClient(script)
    store = JsonlEventStore(tmp_path / "home")
    async with store, EventRecorder(store) as recorder, anyio.create_task_group() as tg:
        service = TurnService(recorder, tg, model=model, tools=builtin_host())
        thread_id = await service.create_thread(ThreadSettings(workspace=str(tmp_path)))
        try:
            yield Harness(service, model, tmp_path / "home", tmp_path, thread_id)
        finally:
            tg.cancel_scope.cancel()


def title_reply(text: str) -> list[ModelStreamChunk]:
    return [TextDeltaChunk(text=text), CompletedChunk(stop_reason="stop")]


async def start(h: Harness, titler: Titler) -> str:
    h.service.titler = titler
    return await h.service.start_turn(h.thread_id, PROMPT)


async def finish(h: Harness, turn_id: str) -> None:
    with anyio.fail_after(10):
        await h.service.wait_turn(h.thread_id, turn_id)


def model_updates(h: Harness) -> list[ev.ThreadUpdated]:
    events = JsonlEventStore(h.home).read(h.thread_id)
    return [e for e in events if isinstance(e, ev.ThreadUpdated) and e.title_source == "model"]


async def test_the_model_title_replaces_the_prompt_title(tmp_path: Path) -> None:
    script = Script(title_reply('"Nightly arm64 build failure."'))
    titler = Recording()
    async with harness(tmp_path, script) as h:
        turn_id = await start(h, titler)
        assert h.state().settings.title_source == "prompt"
        script.title_gate.set()
        with anyio.fail_after(10):
            await titler.done.wait()
        script.turn_gate.set()
        await finish(h, turn_id)
        assert titler.written is True
        assert h.state().settings.title == "Nightly arm64 build failure"
        assert h.state().settings.title_source == "model"
        assert len(model_updates(h)) == 1
        (request,) = script.title_requests
        assert request.tools == () and request.max_tokens == titler.max_tokens
        assert request.reasoning_effort == "off"
        assert request.history[0].text == PROMPT  # type: ignore[union-attr]


async def test_a_title_the_user_set_meanwhile_stays(tmp_path: Path) -> None:
    script = Script(title_reply("Nightly arm64 build failure"))
    titler = Recording()
    async with harness(tmp_path, script) as h:
        turn_id = await start(h, titler)
        assert await h.service.retitle(h.thread_id, "arm64 CI", "user")
        script.title_gate.set()
        with anyio.fail_after(10):
            await titler.done.wait()
        script.turn_gate.set()
        await finish(h, turn_id)
        assert titler.written is False
        assert h.state().settings.title == "arm64 CI" and model_updates(h) == []


async def test_no_model_title_once_a_turn_has_completed(tmp_path: Path) -> None:
    script = Script(title_reply("Nightly arm64 build failure"))
    titler = Recording()
    async with harness(tmp_path, script) as h:
        turn_id = await start(h, titler)
        script.turn_gate.set()
        await finish(h, turn_id)
        script.title_gate.set()
        with anyio.fail_after(10):
            await titler.done.wait()
        assert titler.written is False
        assert h.state().settings.title_source == "prompt" and model_updates(h) == []


async def test_a_model_error_leaves_the_title_and_the_turn_alone(tmp_path: Path) -> None:
    script = Script([ErrorChunk(message="overloaded", code="overloaded_error")])
    script.title_gate.set()
    titler = Recording()
    async with harness(tmp_path, script) as h:
        turn_id = await start(h, titler)
        with anyio.fail_after(10):
            await titler.done.wait()
        script.turn_gate.set()
        await finish(h, turn_id)
        assert titler.written is False
        assert h.turn(turn_id).status == "completed"
        assert h.state().settings.title_source == "prompt" and model_updates(h) == []


async def test_only_the_first_turn_asks_for_a_title(tmp_path: Path) -> None:
    script = Script(title_reply("Nightly arm64 build failure"))
    script.title_gate.set()
    script.turn_gate.set()
    titler = Recording()
    async with harness(tmp_path, script) as h:
        await finish(h, await start(h, titler))
        with anyio.fail_after(10):
            await titler.done.wait()
        await finish(h, await h.service.start_turn(h.thread_id, "and on x86?"))
        assert len(script.title_requests) == 1


def test_the_title_in_a_reply() -> None:
    assert title_from_reply('\n Title: "Fix the build."\nbecause...') == "Fix the build"
    assert title_from_reply("**修复夜间构建**。") == "修复夜间构建"
    assert title_from_reply("   ") == ""
    assert len(title_from_reply("word " * 40)) <= 60


@pytest.mark.parametrize(("toml", "on"), [("", False), ("[runtime]\nmodel_titles = true\n", True)])
async def test_model_titles_are_opt_in_by_configuration(
    tmp_path: Path, toml: str, on: bool
) -> None:
    config = parse_config(toml, "kun.toml")
    async with open_service(tmp_path, ScriptedModelClient(), config=config) as service:
        assert (service.titler is not None) is on
    async with open_service(tmp_path, ScriptedModelClient()) as service:
        assert service.titler is None  # no configuration (kun demo): deterministic
