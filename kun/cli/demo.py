"""``kun demo``: real turns, offline, at a pace a person can watch.

It starts the loopback provider on 127.0.0.1, creates a thread on a small
workspace in a temporary folder, and runs two turns through the real loop.
In the first, the scripted model reads and greps the files in one parallel
step, edits the bug in the next, checks its work, then answers; the second
is a short follow-up question. Everything on the way is real: HTTP and SSE
on a socket, the stream decoders, the tools on disk, the JSONL log, the
prices. Only the model's words are scripted.

Pace: the provider, not kun, is slowed (a pause before each response and
between its SSE events, :data:`PACE`), so the loop and the live view run
exactly as they do against a real model. ``kun demo`` paces only when its
output is a terminal; ``--fast`` turns pacing off there too.

Price: the model id is ``gpt-4.1-mini`` and its tokens are priced as
``openai/gpt-4.1-mini`` in the bundled models.dev catalogue, so the usage
line shows what the same tokens would have cost there (nothing is billed:
the provider is on this machine).

Wire: chat completions by default; ``gemini`` (``kun demo --format
gemini``) serves the same answers as Gemini streams, to
``gemini-2.5-flash`` priced as ``google/gemini-2.5-flash``, its calls
without ids, as Gemini sends them.
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TextIO

import msgspec

from kun.app.home import log_path
from kun.app.interface import Kun
from kun.app.local import open_home
from kun.app.local_engine import engines_over
from kun.app.requests import CreateThread, StartTurn
from kun.cli.terminal import LiveView, PlainSink
from kun.contracts.model import (
    CompletedChunk,
    ModelStreamChunk,
    ReasoningDeltaChunk,
    TextDeltaChunk,
    ToolCallCompleteChunk,
    ToolCallDeltaChunk,
    UsageChunk,
)
from kun.contracts.usage import UsageSnapshot
from kun.model.client import HttpModelClient
from kun.model.toolcalls import SYNTHETIC_ID_PREFIX
from kun.testing.fake_provider import FakeProvider, FakeResponse

MODEL = "gpt-4.1-mini"
CATALOG = "openai"
"""The catalogue provider whose prices the demo's tokens are billed at."""

DemoWire = Literal["chat_completions", "gemini"]
WIRES: dict[str, tuple[str, str]] = {
    "chat_completions": (MODEL, CATALOG),
    "gemini": ("gemini-2.5-flash", "google"),
}
"""The model and catalogue provider of each wire format the demo speaks."""

PACE = (0.35, 0.035)
"""Seconds the paced provider waits before each response (the model
thinking: the spinner shows) and between SSE events (the words stream)."""

PROMPT = "test_calc.py fails. Find the bug in calc.py and fix it."
FOLLOW_UP = "Anything else in calc.py to worry about?"
FOLLOW_UP_ANSWER = (
    "Not much: both helpers are one line. "
    "A test with negative numbers would have caught the sign error sooner."
)
FILES = {
    "calc.py": (
        '"""Small arithmetic helpers."""\n\n\n'
        "def add(a: int, b: int) -> int:\n    return a - b\n\n\n"
        "def mul(a: int, b: int) -> int:\n    return a * b\n"
    ),
    "test_calc.py": (
        "from calc import add, mul\n\n\n"
        "def test_add() -> None:\n    assert add(2, 3) == 5\n\n\n"
        "def test_mul() -> None:\n    assert mul(2, 3) == 6\n"
    ),
    "README.md": "# calc\n\nTiny helpers; run `pytest`.\n",
}


@dataclass(frozen=True)
class DemoRun:
    """The demo thread: its id, log, workspace, turn ids and their statuses."""

    home: Path
    thread_id: str
    path: Path
    workspace: Path
    turn_ids: tuple[str, ...]
    statuses: tuple[str, ...]
    model: str = MODEL
    catalog: str = CATALOG


def _words(text: str) -> list[ModelStreamChunk]:
    """``text`` a word at a time, as a model streams it."""
    return [TextDeltaChunk(text=word) for word in re.findall(r"\S+\s*", text)]


def _call(
    index: int, call_id: str, name: str, arguments: dict[str, object]
) -> list[ModelStreamChunk]:
    raw = msgspec.json.encode(arguments)
    half = len(raw) // 2
    return [
        ToolCallDeltaChunk(call_id=call_id, name=name, arguments=raw[:half].decode(), index=index),
        ToolCallDeltaChunk(call_id=call_id, arguments=raw[half:].decode(), index=index),
        ToolCallCompleteChunk(call_id=call_id, name=name, arguments=msgspec.Raw(raw), index=index),
    ]


def _usage(prompt: int, completion: int, hit: int) -> UsageChunk:
    usage = UsageSnapshot(
        prompt_tokens=prompt,
        completion_tokens=completion,
        cache_hit_tokens=hit,
        cache_miss_tokens=prompt - hit,
    )
    return UsageChunk(usage=usage, model=MODEL)


def script(*, paced: bool = False) -> list[FakeResponse]:
    """The model's five answers (four for the fix, one for the follow-up),
    streamed as a chat completions server would, paced or at full speed."""
    look: list[ModelStreamChunk] = [
        ReasoningDeltaChunk(text="The test expects add(2, 3) == 5. "),
        ReasoningDeltaChunk(text="Read calc.py and find every definition."),
        *_words("I'll read calc.py and list its functions."),
        *_call(0, "call_read", "read_file", {"path": "calc.py"}),
        *_call(1, "call_grep", "grep", {"pattern": r"def \w+", "path": "."}),
        _usage(1840, 96, 0),
        CompletedChunk(stop_reason="tool_calls"),
    ]
    fix: list[ModelStreamChunk] = [
        *_words("`add` subtracts. Fixing it."),
        *_call(
            0,
            "call_edit",
            "edit_file",
            {"path": "calc.py", "old_string": "return a - b", "new_string": "return a + b"},
        ),
        _usage(2410, 71, 1792),
        CompletedChunk(stop_reason="tool_calls"),
    ]
    check: list[ModelStreamChunk] = [
        *_call(0, "call_check", "read_file", {"path": "calc.py", "start_line": 4, "end_line": 5}),
        _usage(2536, 38, 2368),
        CompletedChunk(stop_reason="tool_calls"),
    ]
    answer: list[ModelStreamChunk] = [
        *_words(
            "Fixed: `add` in calc.py returned `a - b`; it now returns `a + b`, "
            "so `test_add` passes. `mul` was already right."
        ),
        _usage(2650, 41, 2496),
        CompletedChunk(stop_reason="stop"),
    ]
    follow_up: list[ModelStreamChunk] = [
        *_words(FOLLOW_UP_ANSWER),
        _usage(2731, 29, 2624),
        CompletedChunk(stop_reason="stop"),
    ]
    think, gap = PACE if paced else (0.0, 0.0)
    return [
        FakeResponse(chunks=tuple(chunks), per_event=True, header_delay=think, piece_delay=gap)
        for chunks in (look, fix, check, answer, follow_up)
    ]


def make_workspace(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, text in FILES.items():
        (root / name).write_text(text)
    return root


async def _turn(kun: Kun, thread_id: str, prompt: str, view: LiveView) -> str:
    """Run one turn of ``prompt`` and show it; its id."""
    after = (await kun.thread(thread_id)).last_seq
    view.note(f"user > {prompt}", "plain")
    started = await kun.start_turn(thread_id, StartTurn(text=prompt, disable_user_input=True))
    await view.follow(after, started.turn_id)
    return started.turn_id


async def run_demo(
    home: Path,
    out: TextIO,
    *,
    color: bool = False,
    paced: bool = False,
    wire: DemoWire = "chat_completions",
) -> DemoRun:
    """Run the demo's two turns into ``home``, showing them on ``out``."""
    workspace = make_workspace(Path(tempfile.mkdtemp(prefix="kun-demo-ws-")))
    model, catalog = WIRES[wire]
    answers = script(paced=paced)
    if wire == "gemini":
        answers = [_as_gemini(answer, model) for answer in answers]
    async with FakeProvider(answers, format=wire) as provider:
        client = HttpModelClient("loopback", model, provider.base_url, wire, catalog=catalog)
        async with client, open_home(home, engines_over(home, client)) as kun:
            created = await kun.create_thread(
                CreateThread(
                    workspace=str(workspace),
                    provider="loopback",
                    model=model,
                    approval_policy="on-request",
                    title="Fix the failing add()",
                )
            )
            thread_id = created.thread_id
            view = LiveView(kun, thread_id, PlainSink(out, spinner=paced, color=color))
            turn_ids = []
            for prompt in (PROMPT, FOLLOW_UP):
                turn_ids.append(await _turn(kun, thread_id, prompt, view))
                out.write("\n")
            turns = [await kun.wait_turn(thread_id, turn_id) for turn_id in turn_ids]
    return DemoRun(
        home=home,
        thread_id=thread_id,
        path=log_path(home, thread_id),
        workspace=workspace,
        turn_ids=tuple(turn_ids),
        statuses=tuple(turn.status for turn in turns),
        model=model,
        catalog=catalog,
    )


def _as_gemini(answer: FakeResponse, model: str) -> FakeResponse:
    """``answer`` as Gemini says it: calls without ids, its model's name."""
    chunks: list[ModelStreamChunk] = []
    for chunk in answer.chunks:
        if isinstance(chunk, ToolCallDeltaChunk | ToolCallCompleteChunk):
            chunk = msgspec.structs.replace(chunk, call_id=f"{SYNTHETIC_ID_PREFIX}{chunk.index}")
        elif isinstance(chunk, UsageChunk):
            chunk = msgspec.structs.replace(chunk, model=model)
        chunks.append(chunk)
    return msgspec.structs.replace(answer, chunks=tuple(chunks))
