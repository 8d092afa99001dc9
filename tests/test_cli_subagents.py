"""Sub-agents from outside: ``kun run`` against a real provider on
127.0.0.1 delegates a task (the sub-agent's request goes over the same
wire), ``kun threads --all`` lists the side thread, ``kun replay
--children`` shows its turn under the call, ``kun usage`` counts it; and
through the HTTP API a sub-agent's approval is answered on the parent."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import anyio
import msgspec
import pytest

from kun.contracts.model import CompletedChunk, TextDeltaChunk, UsageChunk
from kun.contracts.usage import UsageSnapshot
from kun.domain.reduce import replay
from kun.model.scripted import tool_reply
from kun.store.jsonl import JsonlEventStore
from kun.testing.fake_provider import FakeProvider, FakeResponse

pytestmark = pytest.mark.anyio


def _said(text: str, prompt: int) -> FakeResponse:
    usage = UsageSnapshot(prompt_tokens=prompt, completion_tokens=7)
    return FakeResponse(
        chunks=(
            TextDeltaChunk(text=text),
            UsageChunk(usage=usage),
            CompletedChunk(stop_reason="stop"),
        )
    )


def _config(tmp_path: Path, base_url: str, extra: str = "") -> Path:
    config = tmp_path / "kun.toml"
    config.write_text(
        'default_provider = "fake"\n\n[providers.fake]\n'
        f'base_url = "{base_url}"\nendpoint_format = "chat_completions"\n'
        'default_model = "fake-model"\n' + extra
    )
    return config


async def _kun(*args: str) -> tuple[int, str, str]:
    environ = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    result = await anyio.run_process(
        [sys.executable, "-m", "kun", *args],
        check=False,
        env=environ,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    return result.returncode, result.stdout.decode(), result.stderr.decode()


async def test_kun_run_delegates_and_every_reader_follows_the_link(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "parse.py").write_text("def parse(): ...\n")
    home = tmp_path / "home"
    script = [
        FakeResponse(
            chunks=tuple(tool_reply("delegate_task", {"task": "Where is parse() defined?"}))
        ),
        _said("parse() is defined in parse.py, line 1.", 300),
        _said("The helper says: parse.py, line 1.", 500),
    ]
    async with FakeProvider(script, format="chat_completions") as provider:
        config = _config(tmp_path, provider.base_url)
        code, out, err = await _kun(
            "run", "find parse() with a helper",
            "--config", str(config), "--home", str(home), "--workspace", str(workspace),
        )  # fmt: skip
        sent = [r.json for r in provider.requests if r.method == "POST"]
    assert code == 0, err
    assert "-> delegate_task(" in out and "The helper says" in out
    assert "sub-agent (read-only helper) on side thread thr_" in out
    assert len(sent) == 3
    parent_tools = {t["function"]["name"] for t in sent[0]["tools"]}
    child_tools = {t["function"]["name"] for t in sent[1]["tools"]}
    assert "delegate_task" in parent_tools
    assert child_tools == {"glob", "grep", "list_dir", "read_file"}
    thread = err.split()[1]
    store = JsonlEventStore(home)
    parent = replay(store.read(thread))
    (side,) = [t for t in store.list_threads() if t != thread]
    child = replay(store.read(side))
    assert child.settings.hidden and child.settings.parent_thread_id == thread
    assert child.turns[0].status == "completed"

    code, listed, err = await _kun("threads", "--home", str(home))
    assert code == 0, err
    assert side not in listed and thread in listed
    code, listed, err = await _kun("threads", "--all", "--home", str(home))
    assert side in listed

    code, shown, err = await _kun("replay", thread, "--home", str(home))
    assert code == 0, err
    assert f"side thread {side} (read-only helper): kun replay {side}" in shown
    code, expanded, err = await _kun("replay", thread, "--children", "--home", str(home))
    assert code == 0, err
    after = expanded.split(f"side thread {side}", 1)[1]
    assert "Where is parse() defined?" in after
    assert "parse() is defined in parse.py, line 1." in after

    code, usage, err = await _kun("usage", thread, "--home", str(home))
    assert code == 0, err
    assert "includes its sub-agents: 1 model call, 307 tokens" in usage
    code, as_json, err = await _kun("usage", thread, "--json", "--home", str(home))
    report = msgspec.json.decode(as_json)
    (row,) = report["threads"]
    assert row["subagents"]["calls"] == 1
    assert row["usage"]["calls"] == parent.usage.calls + 1
    assert row["usage"]["prompt_tokens"] == 800 == parent.usage.prompt_tokens + 300


async def test_max_agent_depth_zero_offers_no_delegate_task(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    async with FakeProvider([_said("ok", 10)], format="chat_completions") as provider:
        config = _config(tmp_path, provider.base_url, "\n[runtime]\nmax_agent_depth = 0\n")
        code, _, err = await _kun(
            "run", "hi", "--config", str(config), "--home", str(tmp_path / "home"),
            "--workspace", str(workspace),
        )  # fmt: skip
        (sent,) = [r.json for r in provider.requests if r.method == "POST"]
    assert code == 0, err
    assert "delegate_task" not in {t["function"]["name"] for t in sent["tools"]}


async def test_an_agent_naming_an_unknown_provider_is_one_line(tmp_path: Path) -> None:
    config = _config(tmp_path, "http://127.0.0.1:9/v1", '\n[agents.scout]\nprovider = "nowhere"\n')
    code, _, err = await _kun("run", "hi", "--config", str(config), "--home", str(tmp_path))
    assert code != 0
    assert "agents.scout.provider" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
