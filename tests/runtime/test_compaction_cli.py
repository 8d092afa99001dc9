"""``kun compact THREAD`` against a fake provider: the thread's own model
writes the summary, one line says what was compacted; nothing to summarise
is a plain answer; an unknown thread is one line and exit 1."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner, Result

from kun.contracts.items import Compaction
from kun.contracts.model import CompletedChunk, TextDeltaChunk
from kun.entry import cli
from kun.model.scripted import text_reply
from kun.store.paths import log_path
from kun.store.replay import replay_log
from kun.testing.fake_provider import FakeProvider, FakeResponse
from tests.runtime.support import harness
from tests.runtime.test_compaction_loop import LONG

pytestmark = pytest.mark.anyio


def _answer(text: str) -> FakeResponse:
    return FakeResponse(chunks=(TextDeltaChunk(text=text), CompletedChunk(stop_reason="stop")))


def _config(tmp_path: Path, base_url: str) -> Path:
    config = tmp_path / "kun.toml"
    config.write_text(
        'default_provider = "fake"\n\n[providers.fake]\n'
        f'base_url = "{base_url}"\nendpoint_format = "chat_completions"\n'
        'default_model = "fake-model"\n'
    )
    return config


async def _kun(*args: str) -> Result:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    runner = CliRunner()
    return await anyio.to_thread.run_sync(lambda: runner.invoke(cli, list(args), env=env))


async def test_kun_compact_a_thread(tmp_path: Path) -> None:
    async with harness(tmp_path, [text_reply(LONG)]) as h:
        await h.run("what does a.py print?")
        home, thread = h.home, h.thread_id
    script = [_answer("Goal: read a.py. Done: it prints a.")]
    async with FakeProvider(script, format="chat_completions") as provider:
        common = ("--config", str(_config(tmp_path, provider.base_url)), "--home", str(home))
        done = await _kun("compact", thread[:8], *common)
        assert done.exit_code == 0, done.output
        assert done.stdout.startswith(f"compacted 2 items of {thread} into a summary of about ")
        (summariser,) = provider.requests
        assert "conversation above is about to be replaced" in summariser.body.decode()
        again = await _kun("compact", thread, *common)
        assert again.exit_code == 0 and again.stdout.startswith("nothing to compact in ")
        missing = await _kun("compact", "thr_nope", *common)
    assert missing.exit_code == 1 and len(missing.output.strip().splitlines()) == 1
    state = replay_log(log_path(home, thread))
    assert [type(i) for i in state.turns[-1].items] == [Compaction]
