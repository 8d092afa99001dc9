"""``kun run`` in scripts and pipes: the prompt from stdin, events as JSON lines."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import anyio
import msgspec
import pytest

from kun.contracts import events as ev
from kun.contracts.items import UserMessage
from kun.model.scripted import tool_reply
from kun.store.codec import decode_line
from kun.store.jsonl import JsonlEventStore
from kun.testing.fake_provider import FakeProvider, FakeResponse
from kun.testing.logbuilder import LogBuilder
from tests.test_cli_run import ANSWER, _config, _workspace

pytestmark = pytest.mark.anyio


async def _kun(*args: str, stdin: bytes = b"") -> tuple[int, bytes, str]:
    environ = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    result = await anyio.run_process(
        [sys.executable, "-m", "kun", *args],
        input=stdin,
        check=False,
        env=environ,
        start_new_session=True,
    )
    return result.returncode, result.stdout, result.stderr.decode()


async def test_run_dash_reads_the_prompt_and_json_prints_the_log_itself(tmp_path: Path) -> None:
    workspace = _workspace(tmp_path)
    home = tmp_path / "home"
    script = [FakeResponse(chunks=tuple(tool_reply("read_file", {"path": "a.py"}))), ANSWER]
    async with FakeProvider(script, format="chat_completions") as provider:
        config = str(_config(tmp_path, provider.base_url))
        code, out, err = await _kun(
            "run", "-", "--json", "--config", config, "--home", str(home),
            "--workspace", str(workspace),
            stdin=b"what does a.py print?\nanswer briefly\n",
        )  # fmt: skip
    assert code == 0, err
    (thread,) = (home / "threads").iterdir()
    thread_id = thread.name
    assert out == (thread / "events.jsonl").read_bytes()
    events = [decode_line(line, thread_id) for line in out.splitlines()]
    assert isinstance(events[0], ev.ThreadCreated) and isinstance(events[-1], ev.TurnCompleted)
    (message,) = [
        e.item
        for e in events
        if isinstance(e, ev.ItemCompleted) and isinstance(e.item, UserMessage)
    ]
    assert message.text == "what does a.py print?\nanswer briefly"
    assert "a.py prints a." not in err and err.startswith(f"thread {thread_id}")


async def test_json_on_a_thread_prints_only_the_new_turn(tmp_path: Path) -> None:
    workspace = _workspace(tmp_path)
    home = tmp_path / "home"
    async with FakeProvider([ANSWER, ANSWER], format="chat_completions") as provider:
        common = ("--config", str(_config(tmp_path, provider.base_url)), "--home", str(home))
        code, _, err = await _kun("run", "first", *common, "--workspace", str(workspace))
        assert code == 0, err
        thread_id = JsonlEventStore(home).list_threads()[0]
        before = len((home / "threads" / thread_id / "events.jsonl").read_bytes().splitlines())
        code, out, err = await _kun("run", "second", "--json", "--thread", thread_id, *common)
    assert code == 0, err
    events = [decode_line(line) for line in out.splitlines()]
    assert events[0].seq == before + 1 and isinstance(events[0], ev.TurnStarted)
    assert isinstance(events[-1], ev.TurnCompleted)


async def test_a_prompt_on_stdin_that_is_not_text_is_one_error_line(tmp_path: Path) -> None:
    code, out, err = await _kun("run", "-", "--home", str(tmp_path), stdin=b"\xff\xfe bad\n")
    assert code == 1 and out == b""
    assert err.count("\n") == 1 and err.startswith("kun: error: the prompt on stdin is not UTF-8")


def test_a_blank_prompt_on_stdin_is_refused_before_a_thread_exists(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "kun", "run", "-", "--home", str(tmp_path)],
        input=b"\n\n",
        capture_output=True,
        check=False,
    )
    assert result.returncode == 1 and result.stderr.startswith(b"kun: error: ")
    assert not (tmp_path / "threads").exists()


def test_a_reader_that_stops_early_ends_replay_quietly(tmp_path: Path) -> None:
    """``kun replay T | head``: the pipe closes long before the transcript
    ends; kun stops as a tool killed by SIGPIPE does (141), without a line
    on stderr."""
    builder = LogBuilder("thr_pipe")
    builder.create(workspace="/w")
    for n in range(300):
        builder.start_turn(f"question {n}")
        builder.assistant_text([f"answer {n} " * 40])
        builder.complete()
    log = tmp_path / "events.jsonl"
    log.write_bytes(b"".join(msgspec.json.encode(e) + b"\n" for e in builder.events))
    child = subprocess.Popen(
        [sys.executable, "-m", "kun", "replay", str(log)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert child.stdout is not None and child.stderr is not None
    child.stdout.read(100)
    child.stdout.close()
    err = child.stderr.read().decode()
    child.stderr.close()
    assert child.wait(timeout=60) == 141, err
    assert err == ""
