"""An imported thread names the workspace of the machine it came from. A
turn on a thread whose workspace is not a folder here is refused before
anything is recorded, saying how to give it one (never a raw
``FileNotFoundError`` from a tool, which names a workspace removed during
the turn); ``--workspace DIR`` on ``kun run
--thread`` rebinds the thread (``thread_updated``, said on stderr) instead
of being ignored; over HTTP the turn is 409 ``workspace_missing`` and
``PATCH`` takes a ``workspace``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import anyio
import msgspec
import pytest

from kun.contracts.events import ThreadUpdated
from kun.contracts.items import ToolResult
from kun.model.scripted import text_reply, tool_reply
from kun.portable.sessions import import_session
from kun.runtime.errors import WorkspaceMissing
from kun.store.paths import log_path
from kun.store.reader import read_log
from kun.store.replay import replay_log
from kun.testing.fake_provider import FakeProvider
from tests.portable.test_sessions import claude_lines
from tests.runtime.support import harness
from tests.server.support import api
from tests.test_cli_remote import serving
from tests.test_cli_run import ANSWER, _config

pytestmark = pytest.mark.anyio

GONE = "/home/maya/shop"


async def test_the_service_refuses_the_turn_and_records_nothing(tmp_path: Path) -> None:
    async with harness(tmp_path, []) as h:
        for child in h.workspace.iterdir():
            child.unlink()
        h.workspace.rmdir()
        before = h.state().last_seq
        with pytest.raises(WorkspaceMissing) as refused:
            await h.service.start_turn(h.thread_id, "hello")
        assert str(h.workspace) in str(refused.value)
        assert f"kun run --thread {h.thread_id} --workspace DIR" in str(refused.value)
        assert h.state().last_seq == before


@pytest.mark.parametrize(
    ("tool", "arguments"), [("read_file", {"path": "a.py"}), ("bash", {"command": "ls"})]
)
async def test_a_workspace_removed_during_the_turn_is_named_by_the_tool(
    tmp_path: Path, tool: str, arguments: dict[str, str]
) -> None:
    script = [tool_reply(tool, arguments), text_reply("gone")]
    async with harness(tmp_path, script, policy="full-auto") as h:
        turn_id = await h.service.start_turn(h.thread_id, "look")
        shutil.rmtree(h.workspace)  # before the turn's task first runs
        with anyio.fail_after(10):
            turn = await h.service.wait_turn(h.thread_id, turn_id)
    result = next(item for item in turn.items if isinstance(item, ToolResult))
    assert result.is_error
    assert result.output == (
        f"The tool {tool} failed: the workspace {h.workspace} does not exist "
        "(removed or moved during the turn); no tool can work in it."
    )


def _imported(tmp_path: Path, home: Path) -> str:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"".join(msgspec.json.encode(line) + b"\n" for line in claude_lines()))
    return import_session(home, path, "claude-code", replace_changed=False).thread_id


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


@pytest.mark.slow
async def test_kun_run_says_how_and_workspace_rebinds_the_thread(tmp_path: Path) -> None:
    home = tmp_path / "home"
    thread_id = await anyio.to_thread.run_sync(_imported, tmp_path, home)
    here = tmp_path / "ws"
    here.mkdir()
    async with FakeProvider([ANSWER]) as provider:
        config = str(_config(tmp_path, provider.base_url))
        base = ["run", "--thread", thread_id, "--config", config, "--home", str(home)]
        base += ["--provider", "fake", "--model", "fake-model"]
        turns = len(replay_log(log_path(home, thread_id)).turns)
        code, _, stderr = await _kun(*base, "hello")
        assert code == 1, stderr
        assert stderr == (
            f"kun: error: the thread's workspace {GONE} does not exist here; "
            f"kun run --thread {thread_id} --workspace DIR PROMPT --home {home} "
            f"(or kun resume {thread_id} --workspace DIR --home {home}) gives it one\n"
        )
        assert len(replay_log(log_path(home, thread_id)).turns) == turns
        code, _, stderr = await _kun(*base, "--workspace", str(here), "hello")
        assert code == 0, stderr
        assert f"thread {thread_id} now works in {here} (was {GONE})\n" in stderr
    state = replay_log(log_path(home, thread_id))
    assert state.settings.workspace == str(here)
    assert state.turns[-1].status == "completed"
    updates = [e for e in read_log(log_path(home, thread_id)) if isinstance(e, ThreadUpdated)]
    assert updates[-1].workspace == str(here)


async def test_the_api_answers_409_and_patch_gives_the_thread_a_workspace(
    tmp_path: Path,
) -> None:
    async with api(tmp_path, [ANSWER.chunks]) as served:
        thread_id = await anyio.to_thread.run_sync(_imported, tmp_path, served.home)
        refused = await served.client.post(f"/v1/threads/{thread_id}/turns", json={"text": "hi"})
        assert refused.status_code == 409, refused.text
        error = refused.json()["error"]
        assert (error["code"], error["field"]) == ("workspace_missing", "workspace")
        assert f"PATCH /v1/threads/{thread_id}" in error["message"]
        assert "kun run" not in error["message"]
        wrong = await served.client.patch(
            f"/v1/threads/{thread_id}", json={"workspace": str(tmp_path / "nowhere")}
        )
        assert (wrong.status_code, wrong.json()["error"]["field"]) == (400, "workspace")
        patched = await served.client.patch(
            f"/v1/threads/{thread_id}", json={"workspace": str(served.workspace)}
        )
        assert patched.status_code == 200, patched.text
        assert patched.json()["settings"]["workspace"] == str(served.workspace)
        started = await served.client.post(f"/v1/threads/{thread_id}/turns", json={"text": "hi"})
        assert started.status_code in (200, 201, 202), started.text


@pytest.mark.slow
async def test_over_a_server_the_same_refusal_and_rebinding(tmp_path: Path) -> None:
    async with serving(tmp_path, [ANSWER]) as s:
        thread_id = await anyio.to_thread.run_sync(_imported, tmp_path, s.home)
        fake = ("--provider", "fake", "--model", "fake-model")
        refused = await s.kun("run", "--thread", thread_id, *fake, "hello")
        assert refused.returncode == 1, refused
        assert refused.stderr.decode() == (
            f"kun: error: the thread's workspace {GONE} does not exist here; "
            f"kun --server {s.url} run --thread {thread_id} --workspace DIR PROMPT "
            "(a folder on the server's machine) gives it one (HTTP 409, workspace_missing)\n"
        )
        named = await s.kun(
            "--token-env", "MINE", "run", "--thread", thread_id, *fake, "hello", MINE="t"
        )
        assert named.returncode == 1, named
        assert f"; kun --server {s.url} --token-env MINE run --thread {thread_id} " in (
            named.stderr.decode()
        )
        ran = await s.kun(
            "run", "--thread", thread_id, *fake, "--workspace", str(s.workspace), "hi"
        )
        assert ran.returncode == 0, ran.stderr.decode()
        state = replay_log(log_path(s.home, thread_id))
    assert state.settings.workspace == str(s.workspace.resolve())
    assert state.turns[-1].status == "completed"
