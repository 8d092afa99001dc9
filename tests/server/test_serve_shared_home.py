"""One home, two doors: ``kun serve`` (a real process) and the terminal's
``kun run --thread`` (another) on the same thread. The server holds a
thread's writer lock only while it writes it, so the terminal runs a turn
on a thread the server serves while it is idle (and the server's stream and
reads show it); while the server runs a turn, the terminal is refused in one
line naming ``kun serve``, its pid and URL, and the way through it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx
import msgspec
import pytest

from kun.contracts.model import CompletedChunk, TextDeltaChunk
from kun.testing.fake_provider import FakeProvider, FakeResponse
from tests.server.test_serve import (
    _config,
    _environ,
    _serve,
    _until,
    _wait_settled,
    _workspace,
)

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def _answer(text: str, **kwargs: Any) -> FakeResponse:
    chunks = (TextDeltaChunk(text=text), CompletedChunk(stop_reason="stop"))
    return FakeResponse(chunks=chunks, **kwargs)


async def _terminal_run(tmp_path: Path, base_url: str, *args: str) -> tuple[int, str, str]:
    result = await anyio.run_process(
        [sys.executable, "-m", "kun", "run", *args, "--no-color",
         "--config", str(_config(tmp_path, base_url)), "--home", str(tmp_path / "home")],
        check=False, env=_environ(), stdin=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    return result.returncode, result.stdout.decode(), result.stderr.decode()


def _texts(thread: dict[str, Any]) -> list[str]:
    return [
        item["text"]
        for turn in thread["turns"]
        for item in turn["items"]
        if item.get("type") == "assistant_text"
    ]


async def _events_until_completed(
    client: httpx.AsyncClient,
    thread: str,
    after: int,
    seen: list[dict[str, Any]],
    completed: anyio.Event,
) -> None:
    url = f"/v1/threads/{thread}/events?after={after}"
    async with client.stream("GET", url, timeout=30) as response:
        assert response.status_code == 200
        async for line in response.aiter_lines():
            if line.startswith("data: "):
                event = msgspec.json.decode(line[6:])
                seen.append(event)
                if event["kind"] == "turn_completed":
                    completed.set()
                    return


async def test_the_terminal_runs_a_turn_on_a_thread_kun_serve_serves(tmp_path: Path) -> None:
    replies = [_answer("from serve"), _answer("from the terminal"), _answer("serve again")]
    async with FakeProvider(replies, format="chat_completions") as provider:
        async with _serve(tmp_path, provider.base_url) as (_, client):
            created = await client.post("/v1/threads", json={"workspace": _workspace(tmp_path)})
            thread = created.json()["thread_id"]
            first = await client.post(f"/v1/threads/{thread}/turns", json={"text": "one"})
            await _wait_settled(client, thread, first.json()["turn_id"])
            after = (await client.get(f"/v1/threads/{thread}")).json()["last_seq"]
            seen: list[dict[str, Any]] = []
            completed = anyio.Event()
            async with anyio.create_task_group() as tg:
                tg.start_soon(_events_until_completed, client, thread, after, seen, completed)
                code, out, err = await _terminal_run(
                    tmp_path, provider.base_url, "--thread", thread, "two"
                )
                assert code == 0, err
                assert "from the terminal" in out
                with anyio.fail_after(10):
                    await completed.wait()
            assert seen[0]["seq"] == after + 1 and seen[0]["kind"] == "turn_started"
            shown = (await client.get(f"/v1/threads/{thread}")).json()
            assert _texts(shown) == ["from serve", "from the terminal"]
            third = await client.post(f"/v1/threads/{thread}/turns", json={"text": "three"})
            assert third.status_code == 202, third.text
            settled = await _wait_settled(client, thread, third.json()["turn_id"])
            assert settled["status"] == "completed"
            shown = (await client.get(f"/v1/threads/{thread}")).json()
            assert _texts(shown) == ["from serve", "from the terminal", "serve again"]
    log = (tmp_path / "home" / "threads" / thread / "events.jsonl").read_bytes()
    seqs = [msgspec.json.decode(line)["seq"] for line in log.splitlines()]
    assert seqs == list(range(1, len(seqs) + 1))


async def test_while_serve_runs_a_turn_the_terminal_is_told_who_and_how(tmp_path: Path) -> None:
    stalled = _answer("slow", stalls=((0, 60.0),))
    async with FakeProvider([stalled], format="chat_completions") as provider:
        async with _serve(tmp_path, provider.base_url) as (process, client):
            created = await client.post("/v1/threads", json={"workspace": _workspace(tmp_path)})
            thread = created.json()["thread_id"]
            started = await client.post(f"/v1/threads/{thread}/turns", json={"text": "hang"})
            assert started.status_code == 202
            await _until(lambda: bool(provider.requests))
            code, _, err = await _terminal_run(
                tmp_path, provider.base_url, "--thread", thread, "me too"
            )
            url = str(client.base_url).rstrip("/")
            await client.post(
                f"/v1/threads/{thread}/turns/{started.json()['turn_id']}/interrupt", json={}
            )
    assert code != 0 and err.count("\n") == 1 and err.startswith("kun: error: "), err
    assert f"kun serve (process {process.pid}, {url})" in err
    assert f"kun --server {url} run --thread {thread}" in err
