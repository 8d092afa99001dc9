"""``kun demo``: a real multi-step, tool-using turn, offline.

It starts the loopback provider on 127.0.0.1, creates a thread on a small
workspace in a temporary folder, and runs one turn through the real loop: the
scripted model reads and greps the files in one parallel step, edits the bug
in the next, checks its work, then answers. Everything on the way is real:
HTTP and SSE on a socket, the stream decoders, the tools on disk, the JSONL
log. Only the model's words are scripted.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import msgspec

from kun.contracts.model import (
    CompletedChunk,
    ModelStreamChunk,
    ReasoningDeltaChunk,
    TextDeltaChunk,
    ToolCallCompleteChunk,
    ToolCallDeltaChunk,
    UsageChunk,
)
from kun.contracts.threads import ThreadSettings
from kun.contracts.usage import UsageSnapshot
from kun.model.client import HttpModelClient
from kun.session import open_service
from kun.store.paths import log_path
from kun.terminal import LiveView, PlainSink
from kun.testing.fake_provider import FakeProvider, FakeResponse

PROMPT = "test_calc.py fails. Find the bug in calc.py and fix it."
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
    thread_id: str
    path: Path
    workspace: Path
    status: str


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
    return UsageChunk(usage=usage, model="kun-demo-1")


def script() -> list[FakeResponse]:
    """The model's four answers, streamed as a chat completions server would."""
    look: list[ModelStreamChunk] = [
        ReasoningDeltaChunk(text="The test expects add(2, 3) == 5. "),
        ReasoningDeltaChunk(text="Read calc.py and find every definition."),
        TextDeltaChunk(text="I'll read "),
        TextDeltaChunk(text="calc.py and list its functions."),
        *_call(0, "call_read", "read_file", {"path": "calc.py"}),
        *_call(1, "call_grep", "grep", {"pattern": r"def \w+", "path": "."}),
        _usage(1840, 96, 0),
        CompletedChunk(stop_reason="tool_calls"),
    ]
    fix: list[ModelStreamChunk] = [
        TextDeltaChunk(text="`add` subtracts. "),
        TextDeltaChunk(text="Fixing it."),
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
        TextDeltaChunk(text="Fixed: `add` in calc.py returned `a - b`; "),
        TextDeltaChunk(text="it now returns `a + b`, so `test_add` passes. "),
        TextDeltaChunk(text="`mul` was already right."),
        _usage(2650, 41, 2496),
        CompletedChunk(stop_reason="stop"),
    ]
    return [
        FakeResponse(chunks=tuple(chunks), per_event=True) for chunks in (look, fix, check, answer)
    ]


def make_workspace(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, text in FILES.items():
        (root / name).write_text(text)
    return root


async def run_demo(home: Path, out: TextIO, *, color: bool = False) -> DemoRun:
    workspace = make_workspace(Path(tempfile.mkdtemp(prefix="kun-demo-ws-")))
    async with FakeProvider(script(), format="chat_completions") as provider:
        client = HttpModelClient("loopback", "kun-demo-1", provider.base_url, "chat_completions")
        async with client, open_service(home, client) as service:
            settings = ThreadSettings(
                workspace=str(workspace),
                provider="loopback",
                model="kun-demo-1",
                approval_policy="on-request",
                title="Fix the failing add()",
                title_auto=False,
            )
            thread_id = await service.create_thread(settings)
            view = LiveView(service, thread_id, PlainSink(out, color=color))
            after = service.state(thread_id).last_seq
            out.write(f"user > {PROMPT}\n")
            turn_id = await service.start_turn(thread_id, PROMPT, disable_user_input=True)
            await view.follow(after, turn_id)
            turn = await service.wait_turn(thread_id, turn_id)
    return DemoRun(thread_id, log_path(home, thread_id), workspace, turn.status)
