"""``kun serve`` as a user runs it: a real process on 127.0.0.1, httpx as
the client, the fake provider on another port. A full tool-using turn;
the token; a non-loopback bind refused; SIGTERM mid-turn leaving the turn
aborted in a consistent log (and an open event stream ended, not waited
for); orphaned turns reconciled once the server listens."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import msgspec
import pytest
from anyio.abc import Process

from kun.contracts import events as ev
from kun.contracts.model import CompletedChunk, TextDeltaChunk, ToolCallCompleteChunk
from kun.domain.reduce import replay
from kun.model.scripted import tool_reply
from kun.model.toolcalls import SYNTHETIC_ID_PREFIX
from kun.server.runner import GRACE_SECONDS
from kun.store.jsonl import JsonlEventStore
from kun.testing.fake_provider import FakeProvider, FakeResponse
from kun.testing.logbuilder import LogBuilder

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

ANSWER = FakeResponse(
    chunks=(TextDeltaChunk(text="a.py prints a."), CompletedChunk(stop_reason="stop"))
)
START_SECONDS = 20.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _config(tmp_path: Path, base_url: str, fmt: str = "chat_completions") -> Path:
    config = tmp_path / "kun.toml"
    config.write_text(
        'default_provider = "fake"\n\n[providers.fake]\n'
        f'base_url = "{base_url}"\nendpoint_format = "{fmt}"\n'
        'default_model = "fake-model"\n'
    )
    return config


def _environ(extra: dict[str, str] | None = None) -> dict[str, str]:
    environ = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    return {**environ, **(extra or {})}


@asynccontextmanager
async def _serve(
    tmp_path: Path,
    base_url: str,
    *args: str,
    env: dict[str, str] | None = None,
    kun: tuple[str, ...] = (sys.executable, "-m", "kun"),
    fmt: str = "chat_completions",
) -> AsyncIterator[tuple[Process, httpx.AsyncClient]]:
    port = _free_port()
    config = _config(tmp_path, base_url, fmt)
    command = [
        *kun, "serve", "--port", str(port),
        "--config", str(config), "--home", str(tmp_path / "home"), *args,
    ]  # fmt: skip
    with (tmp_path / "serve.out").open("wb") as out:
        process = await anyio.open_process(
            command, env=_environ(env), cwd=tmp_path, stdin=subprocess.DEVNULL,
            stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    async with process, httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
        try:
            with anyio.fail_after(START_SECONDS):
                await _until_listening(process, client)
            yield process, client
        finally:
            if process.returncode is None:
                process.kill()


async def _until_listening(process: Process, client: httpx.AsyncClient) -> None:
    while True:
        try:
            await client.get("/v1/threads")
            return
        except httpx.TransportError:
            assert process.returncode is None, "kun serve exited"
            await anyio.sleep(0.05)


async def _until(condition: Callable[[], bool]) -> None:
    with anyio.fail_after(10):
        while True:
            if condition():
                return
            await anyio.sleep(0.02)


async def _wait_settled(client: httpx.AsyncClient, thread: str, turn: str) -> dict[str, Any]:
    with anyio.fail_after(10):
        while True:
            got: dict[str, Any] = (await client.get(f"/v1/threads/{thread}/turns/{turn}")).json()
            if got["status"] not in ("queued", "running"):
                return got
            await anyio.sleep(0.02)


def _workspace(tmp_path: Path) -> str:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    (workspace / "a.py").write_text("print('a')\n")
    return str(workspace)


async def test_a_full_turn_over_http(tmp_path: Path) -> None:
    script = [FakeResponse(chunks=tuple(tool_reply("read_file", {"path": "a.py"}))), ANSWER]
    async with FakeProvider([*script, ANSWER], format="chat_completions") as provider:
        async with _serve(tmp_path, provider.base_url) as (_, client):
            created = await client.post("/v1/threads", json={"workspace": _workspace(tmp_path)})
            thread = created.json()["thread_id"]
            started = await client.post(f"/v1/threads/{thread}/turns", json={"text": "a.py?"})
            assert started.status_code == 202
            turn = await _wait_settled(client, thread, started.json()["turn_id"])
            assert turn["status"] == "completed"
            assert turn["items"][-1]["text"] == "a.py prints a."
            unknown = await client.patch(f"/v1/threads/{thread}", json={"provider": "nope"})
            assert unknown.status_code == 400 and "nope" in unknown.json()["error"]["message"]
            switched = await client.patch(f"/v1/threads/{thread}", json={"model": "fake-2"})
            assert switched.json()["settings"]["model"] == "fake-2"
            again = await client.post(f"/v1/threads/{thread}/turns", json={"text": "again"})
            await _wait_settled(client, thread, again.json()["turn_id"])
            assert [r.json["model"] for r in provider.requests] == ["fake-model"] * 2 + ["fake-2"]
            projection = (await client.get(f"/v1/threads/{thread}")).json()
            log = (await client.get(f"/v1/threads/{thread}/log")).content
    state = replay(JsonlEventStore(tmp_path / "home").read(thread))
    assert projection == msgspec.json.decode(msgspec.json.encode(state))
    assert log == (tmp_path / "home" / "threads" / thread / "events.jsonl").read_bytes()
    assert [t.model for t in state.turns] == ["fake-model", "fake-2"]
    said = (tmp_path / "serve.out").read_text()
    assert "kun serve: the web view is at http://127.0.0.1:" in said and "?token" not in said


async def test_a_gemini_turn_with_a_tool_call_over_http(tmp_path: Path) -> None:
    """The HTTP API over the Gemini format: the call Gemini made without an
    id runs under the id kun gave it, its signature is on the call item,
    and the next request answers it by name, with the signature back on
    the call's part."""
    call = [
        msgspec.structs.replace(chunk, thought_signature="Z2VtLXNpZw==")
        if isinstance(chunk, ToolCallCompleteChunk)
        else chunk
        for chunk in tool_reply("read_file", {"path": "a.py"}, call_id=f"{SYNTHETIC_ID_PREFIX}0")
    ]
    script = [FakeResponse(chunks=tuple(call)), ANSWER]
    async with FakeProvider(script, format="gemini") as provider:
        async with _serve(tmp_path, provider.base_url, fmt="gemini") as (_, client):
            created = await client.post("/v1/threads", json={"workspace": _workspace(tmp_path)})
            thread = created.json()["thread_id"]
            started = await client.post(f"/v1/threads/{thread}/turns", json={"text": "a.py?"})
            assert started.status_code == 202
            turn = await _wait_settled(client, thread, started.json()["turn_id"])
        requests = provider.requests
    assert turn["status"] == "completed"
    assert turn["items"][-1]["text"] == "a.py prints a."
    (called,) = [item for item in turn["items"] if item["type"] == "tool_call"]
    assert called["thought_signature"] == "Z2VtLXNpZw=="
    assert called["call_id"] == called["id"], "Gemini gave no id: the item's names the call"
    assert [r.path for r in requests] == ["/v1/models/fake-model:streamGenerateContent"] * 2
    model, answered = requests[1].json["contents"][-2:]
    assert model["parts"][-1]["thoughtSignature"] == "Z2VtLXNpZw=="
    assert answered["parts"][0]["functionResponse"]["name"] == "read_file"


async def test_the_token_is_required_and_a_public_bind_needs_one(tmp_path: Path) -> None:
    async with FakeProvider([], format="chat_completions") as provider:
        refused = await anyio.run_process(
            [sys.executable, "-m", "kun", "serve", "--host", "0.0.0.0", "--port", "1",
             "--home", str(tmp_path / "home")],
            env=_environ(), check=False,
        )  # fmt: skip
        assert refused.returncode == 2
        stderr = refused.stderr.decode()
        assert stderr.count("\n") == 1 and "without a token" in stderr
        env = {"KUN_TEST_TOKEN": "s3cret"}
        async with _serve(
            tmp_path, provider.base_url, "--token-env", "KUN_TEST_TOKEN", env=env
        ) as (_, client):
            assert (await client.get("/v1/threads")).status_code == 401
            headers = {"Authorization": "Bearer s3cret"}
            assert (await client.get("/v1/threads", headers=headers)).status_code == 200
    said = (tmp_path / "serve.out").read_text()
    assert "open it once with ?token=<your token>" in said and "s3cret" not in said


async def test_sigterm_mid_turn_aborts_it_and_ends_open_streams(tmp_path: Path) -> None:
    stalled = FakeResponse(chunks=ANSWER.chunks, stalls=((1, 60.0),))
    async with FakeProvider([stalled], format="chat_completions") as provider:
        async with _serve(tmp_path, provider.base_url) as (process, client):
            created = await client.post("/v1/threads", json={"workspace": _workspace(tmp_path)})
            thread = created.json()["thread_id"]
            started = await client.post(f"/v1/threads/{thread}/turns", json={"text": "hang"})
            turn_id = started.json()["turn_id"]
            ended = anyio.Event()

            async def follow() -> None:
                url = f"/v1/threads/{thread}/events"
                async with client.stream("GET", url, timeout=30) as response:
                    assert response.status_code == 200
                    async for _ in response.aiter_raw():
                        pass
                ended.set()

            async with anyio.create_task_group() as tg:
                tg.start_soon(follow)
                await _until(lambda: bool(provider.requests))
                began = time.monotonic()
                process.send_signal(signal.SIGTERM)
                with anyio.fail_after(GRACE_SECONDS - 2):
                    await ended.wait()
                    code = await process.wait()
    assert code == 0 and time.monotonic() - began < GRACE_SECONDS
    events = list(JsonlEventStore(tmp_path / "home").read(thread, mode="strict"))
    state = replay(events)
    assert state.turns[0].turn_id == turn_id and state.turns[0].status == "aborted"
    assert isinstance(events[-1], ev.TurnAborted)


async def test_orphaned_turns_are_settled_once_the_server_listens(tmp_path: Path) -> None:
    b = LogBuilder("t_orphan")
    b.create(workspace=str(tmp_path))
    b.start_turn("deploy")
    path = tmp_path / "home" / "threads" / "t_orphan" / "events.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"".join(msgspec.json.encode(e) + b"\n" for e in b.events))
    async with FakeProvider([], format="chat_completions") as provider:
        async with _serve(tmp_path, provider.base_url) as (_, client):
            with anyio.fail_after(10):
                while True:
                    turn = (await client.get("/v1/threads/t_orphan")).json()["turns"][0]
                    if turn["status"] != "running":
                        break
                    await anyio.sleep(0.05)
    assert turn["status"] == "failed" and turn["error"]["code"] == "orphaned"
