"""Driving the real ``kun`` in a pseudo-terminal against the loopback provider.

The provider runs on its own event loop in a thread, so a test can drive the
child with pexpect's blocking calls beside it. Timeouts are generous
failsafes against a hung child, never timing assertions.
"""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import pexpect

from kun.contracts import events as ev
from kun.contracts.model import CompletedChunk, TextDeltaChunk
from kun.domain.reduce import replay
from kun.domain.state import ThreadState
from kun.store.jsonl import JsonlEventStore
from kun.testing.fake_provider import FakeProvider, FakeResponse, ScriptItem

TIMEOUT = 30
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][A-Z0-9]|\x1b[=>]")


def answer(text: str) -> FakeResponse:
    return FakeResponse(chunks=(TextDeltaChunk(text=text), CompletedChunk(stop_reason="stop")))


def slow_answer(words: int = 3000, delay: float = 0.01, sep: str = " ") -> FakeResponse:
    """An answer that streams for a long while: ``word0 word1 ...``."""
    chunks = tuple(TextDeltaChunk(text=f"word{i}{sep}") for i in range(words))
    return FakeResponse(
        chunks=(*chunks, CompletedChunk(stop_reason="stop")), per_event=True, piece_delay=delay
    )


@contextmanager
def serve(script: Sequence[ScriptItem]) -> Iterator[FakeProvider]:
    """The loopback provider, served from a thread until the block ends."""
    ready = threading.Event()
    stop = threading.Event()
    box: dict[str, Any] = {}

    async def main() -> None:
        async with FakeProvider(script, format="chat_completions") as provider:
            box["provider"] = provider
            ready.set()
            await anyio.to_thread.run_sync(stop.wait)

    def run() -> None:
        try:
            anyio.run(main)
        except BaseException as exc:  # reported to the test below
            box["error"] = exc
            ready.set()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    ready.wait(TIMEOUT)
    if "provider" not in box:
        raise RuntimeError(f"the fake provider did not start: {box.get('error')!r}")
    try:
        yield box["provider"]
    finally:
        stop.set()
        thread.join(TIMEOUT)


def write_config(directory: Path, base_url: str) -> Path:
    config = directory / "kun.toml"
    config.write_text(
        'default_provider = "fake"\n\n[providers.fake]\n'
        f'base_url = "{base_url}"\nendpoint_format = "chat_completions"\n'
        'default_model = "fake-model"\n'
    )
    return config


def environ(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(TERM="xterm", PROMPT_TOOLKIT_NO_CPR="1", COLUMNS="120", LINES="40")
    env.pop("NO_COLOR", None)
    env.update(extra)
    return env


def spawn(args: Sequence[str], *, cwd: Path, shell: bool = False) -> pexpect.spawn:
    """``python -m kun ARGS`` on a fresh pseudo-terminal (or, with ``shell``,
    ARGS as a shell command line, for pipes)."""
    if shell:
        command, argv = "/bin/sh", ["-c", " ".join(args)]
    else:
        command, argv = sys.executable, ["-m", "kun", *args]
    child = pexpect.spawn(
        command,
        argv,
        cwd=str(cwd),
        env=environ(),
        encoding="utf-8",
        codec_errors="replace",
        timeout=TIMEOUT,
        dimensions=(40, 120),
    )
    child.logfile_read = io.StringIO()
    return child


def shown(child: pexpect.spawn) -> str:
    """Everything the child has printed so far, escape sequences removed."""
    log = child.logfile_read
    assert isinstance(log, io.StringIO)
    return plain(log.getvalue())


def kun(*args: str, cwd: Path | None = None) -> tuple[int, str, str]:
    """``python -m kun ARGS`` without a terminal: stdin is /dev/null, the
    outputs are pipes, and it runs in its own session (no controlling tty)."""
    result = subprocess.run(
        [sys.executable, "-m", "kun", *args],
        cwd=cwd,
        env=environ(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        start_new_session=True,
    )
    return result.returncode, result.stdout, result.stderr


def finish(child: pexpect.spawn) -> tuple[int | None, str]:
    """Wait for the child to exit; its exit status and everything it printed."""
    child.expect(pexpect.EOF)
    child.close()
    return child.exitstatus, shown(child)


def plain(text: str) -> str:
    return ANSI.sub("", text)


def events_of(home: Path, thread_id: str) -> list[ev.Event]:
    return list(JsonlEventStore(home).read(thread_id))


def only_thread(home: Path) -> str:
    (thread_id,) = JsonlEventStore(home).list_threads()
    return thread_id


def state_of(home: Path, thread_id: str) -> ThreadState:
    return replay(events_of(home, thread_id))


def assert_settled(home: Path, thread_id: str) -> ThreadState:
    """Nothing open: every turn settled, no pending approval or question, no
    item in progress."""
    state = state_of(home, thread_id)
    assert state.pending_approvals == () and state.pending_user_inputs == ()
    for turn in state.turns:
        assert turn.settled, turn
        assert all(item.status not in ("in_progress", "pending") for item in turn.items)
    return state
