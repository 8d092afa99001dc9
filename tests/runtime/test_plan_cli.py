"""``kun run --plan`` as a user runs it: the turn is recorded in plan mode,
the change tools are not offered, and the plan is in the log."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from kun.contracts.items import Plan
from kun.contracts.model import CompletedChunk, TextDeltaChunk
from kun.domain.reduce import replay
from kun.store.jsonl import JsonlEventStore
from kun.testing.fake_provider import FakeProvider, FakeResponse

pytestmark = pytest.mark.anyio

PROSE = "1. Add the flag\n2. Write a test\n\nDoes this look right?"


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


async def test_kun_run_plan_records_a_plan_mode_turn(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    answer = FakeResponse(chunks=(TextDeltaChunk(text=PROSE), CompletedChunk(stop_reason="stop")))
    async with FakeProvider([answer], format="chat_completions") as provider:
        config = tmp_path / "kun.toml"
        config.write_text(
            'default_provider = "fake"\n\n[providers.fake]\n'
            f'base_url = "{provider.base_url}"\nendpoint_format = "chat_completions"\n'
            'default_model = "fake-model"\n'
        )
        code, _out, err = await _kun(
            "run", "plan a flag", "--plan",
            "--config", str(config), "--home", str(tmp_path / "home"),
            "--workspace", str(workspace),
        )  # fmt: skip
        sent = provider.requests[0].json
    assert code == 0, err
    tools = {t["function"]["name"] for t in sent["tools"]}
    assert "create_plan" in tools and "read_file" in tools
    assert not tools & {"bash", "write_file", "edit_file"}
    state = replay(JsonlEventStore(tmp_path / "home").read(err.split()[1]))
    turn = state.turns[0]
    assert turn.plan_mode and turn.status == "completed"
    assert [i.markdown for i in turn.items if isinstance(i, Plan)] == [PROSE]


async def test_a_prose_plan_under_untrusted_is_titled_from_the_prose_and_never_asked(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    prose = "## Add a --verbose flag\n\n- [ ] parse it\n- [ ] test it\n"
    answer = FakeResponse(chunks=(TextDeltaChunk(text=prose), CompletedChunk(stop_reason="stop")))
    home = tmp_path / "home"
    async with FakeProvider([answer], format="chat_completions") as provider:
        config = tmp_path / "kun.toml"
        config.write_text(
            'default_provider = "fake"\n\n[providers.fake]\n'
            f'base_url = "{provider.base_url}"\nendpoint_format = "chat_completions"\n'
            'default_model = "fake-model"\n'
        )
        code, out, err = await _kun(
            "run", "plan a flag", "--plan", "--approval", "untrusted",
            "--config", str(config), "--home", str(home), "--workspace", str(workspace),
        )  # fmt: skip
    assert code == 0, err
    assert "approval" not in out and "Materialized" not in out
    assert "plan recorded: Add a --verbose flag" in out
    thread_id = err.split()[1]
    turn = replay(JsonlEventStore(home).read(thread_id)).turns[0]
    assert turn.status == "completed"
    (plan,) = [i for i in turn.items if isinstance(i, Plan)]
    assert (plan.summary, plan.from_reply, plan.markdown) == ("Add a --verbose flag", True, prose)
    code, shown, err = await _kun("replay", thread_id, "--home", str(home))
    assert code == 0, err
    assert "plan (from the reply): Add a --verbose flag" in shown
    assert "Materialized" not in shown
