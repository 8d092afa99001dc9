"""The project context (issue 9, item 5): ``AGENTS.md`` (else ``CLAUDE.md``)
and the environment block reach the model after the system prompt, are
recorded in ``turn_started``, and a request rebuilt from the log is the one
that was sent, whatever the file says now."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest

from kun.contracts import events as ev
from kun.contracts.context import TurnContext
from kun.contracts.model import CompletedChunk, ModelRequest, TextDeltaChunk, WireFormat
from kun.contracts.threads import ThreadSettings
from kun.model.scripted import ScriptedModelClient
from kun.runtime.project import MAX_INSTRUCTION_BYTES, render_project_context
from kun.runtime.recorder import EventRecorder
from kun.runtime.service import TurnService
from kun.store.jsonl import JsonlEventStore
from kun.tools.host import default_host
from tests.model.request.histories import FORMATS, MODEL, Case
from tests.runtime.support import calls

pytestmark = pytest.mark.anyio

ANSWER = [TextDeltaChunk(text="done"), CompletedChunk(stop_reason="stop")]
READ = calls(("read_file", {"path": "a.py"}))
DAY = datetime(2031, 7, 14, 12, 0)


@dataclass
class Run:
    service: TurnService
    model: ScriptedModelClient
    thread_id: str
    home: Path

    async def turn(self, text: str = "go") -> str:
        turn_id = await self.service.start_turn(self.thread_id, text)
        with anyio.fail_after(10):
            await self.service.wait_turn(self.thread_id, turn_id)
        return turn_id

    def logged(self) -> list[TurnContext]:
        """The contexts the log recorded, turn by turn (read back from disk)."""
        found = []
        for event in JsonlEventStore(self.home).read(self.thread_id):
            if isinstance(event, ev.TurnStarted):
                assert isinstance(event.context, TurnContext)
                found.append(event.context)
        return found


@asynccontextmanager
async def running(
    workspace: Path, script: list[Any], *, project: bool = True, **kwargs: Any
) -> AsyncIterator[Run]:
    (workspace / "a.py").write_text("print('a')\n")
    home = workspace.parent / "home"
    model = ScriptedModelClient(script)
    store = JsonlEventStore(home)
    clock = lambda: int(DAY.timestamp() * 1000)  # noqa: E731
    async with store, EventRecorder(store, clock=clock) as recorder:
        async with anyio.create_task_group() as tg:
            service = TurnService(
                recorder, tg, model=model, tools=default_host(), project_context=project, **kwargs
            )
            thread_id = await service.create_thread(ThreadSettings(workspace=str(workspace)))
            yield Run(service, model, thread_id, home)
            tg.cancel_scope.cancel()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


async def test_the_request_carries_agents_md_and_the_environment(workspace: Path) -> None:
    (workspace / "AGENTS.md").write_text("Run `make test` before you finish.\n")
    (workspace / "CLAUDE.md").write_text("Claude's file, not read when AGENTS.md exists.\n")
    async with running(workspace, [ANSWER], system_prompt="You are kun.") as run:
        await run.turn()
    (request,) = run.model.requests
    assert request.system_prompt == "You are kun."
    project = request.project_context or ""
    assert "# Project instructions (AGENTS.md)" in project
    assert "Run `make test` before you finish." in project
    assert "Claude's file" not in project
    assert f"<workspace>{workspace}</workspace>" in project
    assert "<date>2031-07-14</date>" in project, "the date is the turn's, from its clock"
    assert "<os>" in project and "<shell>" in project


async def test_claude_md_is_read_when_there_is_no_agents_md(workspace: Path) -> None:
    (workspace / "CLAUDE.md").write_text("Use tabs.\n")
    async with running(workspace, [ANSWER]) as run:
        await run.turn()
    project = run.model.requests[0].project_context or ""
    assert "# Project instructions (CLAUDE.md)" in project and "Use tabs." in project
    assert run.logged()[0].instructions_file == "CLAUDE.md"


async def test_without_either_file_only_the_environment_is_sent(workspace: Path) -> None:
    async with running(workspace, [ANSWER]) as run:
        await run.turn()
    project = run.model.requests[0].project_context or ""
    assert project.startswith("<environment_context>") and "Project instructions" not in project
    assert run.logged()[0].instructions is None


async def test_a_large_file_is_cut_with_a_note(workspace: Path) -> None:
    text = "é" * MAX_INSTRUCTION_BYTES  # two bytes each: cut mid-file, on a character
    (workspace / "AGENTS.md").write_text(text)
    async with running(workspace, [ANSWER]) as run:
        await run.turn()
    (context,) = run.logged()
    assert context.instructions is not None
    assert len(context.instructions.encode()) == MAX_INSTRUCTION_BYTES
    assert context.instructions_bytes == len(text.encode())
    note = f"[kun: AGENTS.md is {len(text.encode()):,} bytes; only its first 32,768 are shown]"
    assert note in (run.model.requests[0].project_context or "")


async def test_replay_gives_the_request_inputs_that_were_sent_after_the_file_changed(
    workspace: Path,
) -> None:
    agents = workspace / "AGENTS.md"
    agents.write_text("First rules.\n")
    async with running(
        workspace, [READ, ANSWER, ANSWER], system_prompt="Persona.", reasoning_effort="high"
    ) as run:
        await run.turn()
        agents.write_text("Second rules.\n")
        await run.turn()
    first, _, second = run.model.requests
    assert "First rules." in (first.project_context or "")
    assert "Second rules." in (second.project_context or "")
    logged = run.logged()
    sent = [first, second]
    for context, request in zip(logged, sent, strict=True):
        assert context.system_prompt == request.system_prompt == "Persona."
        assert render_project_context(context) == request.project_context
        assert context.reasoning_effort == request.reasoning_effort == "high"
    assert "First rules." in render_project_context(logged[0]), "read from the log, not the file"


async def test_every_step_and_turn_sends_the_same_leading_bytes(workspace: Path) -> None:
    (workspace / "AGENTS.md").write_text("Rules.\n")
    async with running(workspace, [READ, ANSWER, ANSWER]) as run:
        await run.turn()
        await run.turn()
    leading = {(r.system_prompt, r.project_context) for r in run.model.requests}
    assert len(leading) == 1


async def test_a_service_without_project_context_records_none(workspace: Path) -> None:
    (workspace / "AGENTS.md").write_text("Rules.\n")
    async with running(workspace, [ANSWER], project=False, system_prompt="S") as run:
        await run.turn()
    assert run.model.requests[0].project_context is None
    started = [e for e in JsonlEventStore(run.home).read(run.thread_id)]
    assert all(e.context is msgspec.UNSET for e in started if isinstance(e, ev.TurnStarted)), (
        "the field is left out, so old lines keep their bytes"
    )


def _request(project: str) -> ModelRequest:
    request = Case(history=(), system="You are kun.").request()
    return msgspec.structs.replace(request, project_context=project)


@pytest.mark.parametrize("fmt", FORMATS)
def test_each_wire_format_sends_it_right_after_the_system_prompt(fmt: WireFormat) -> None:
    project = "# Project instructions (AGENTS.md)\n\nRules."
    case = Case(history=())
    body = case.codec(fmt).encode(
        _request(project), model=MODEL[fmt], stream=True, max_tokens=None, reasoning_effort=None
    )
    if fmt == "chat_completions":
        leading = [m["content"] for m in body["messages"][:2]]
        assert [m["role"] for m in body["messages"][:2]] == ["system", "system"]
        assert leading == ["You are kun.", project]
    elif fmt == "responses":
        assert body["instructions"] == f"You are kun.\n\n{project}"
    elif fmt == "gemini":
        parts = body["systemInstruction"]["parts"]
        assert [part["text"] for part in parts] == ["You are kun.", project]
    else:
        assert [block["text"] for block in body["system"]] == ["You are kun.", project]
