"""``kun.client``: the async client against the app in process, the sync
one against a real uvicorn server on 127.0.0.1 (a thread of this test)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import httpx
import pytest

from kun.client import ApiError, AsyncKunClient, KunClient
from kun.model.scripted import ScriptedModelClient, text_reply, tool_reply
from kun.server.app import create_app
from kun.server.backend import backend_over
from kun.server.runner import server_for
from tests.server.support import api

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6364f8cf500f0003860180"
    "5a347d6b0000000049454e44ae426082"
)


@pytest.mark.anyio
async def test_the_async_client_drives_a_thread(tmp_path: Path) -> None:
    script = [text_reply("one"), tool_reply("write_file", {"path": "c.py", "content": "x"}),
              text_reply("written")]  # fmt: skip
    async with api(tmp_path, script) as a:
        transport = httpx.ASGITransport(app=a.app)
        async with AsyncKunClient("http://kun", transport=transport) as kun:
            thread = await kun.create_thread(workspace=str(a.workspace), approval_policy="auto")
            image = tmp_path / "dot.png"
            image.write_bytes(PNG)
            first = await kun.start_turn(thread, "look", attachments=[image])
            with anyio.fail_after(10):
                assert (await kun.wait_turn(thread, first, poll=0.01))["status"] == "completed"
            second = await kun.start_turn(thread, "write c.py")
            (approval,) = await _pending_approvals(kun, thread)
            await kun.answer_approval(approval, "approved")
            with pytest.raises(ApiError) as conflict:
                await kun.answer_approval(approval, "denied")
            assert (conflict.value.status, conflict.value.code) == (409, "not_pending")
            with anyio.fail_after(10):
                await kun.wait_turn(thread, second, poll=0.01)
            assert (await kun.rewind(thread, 2))["turn_id"] == second
            assert (await kun.undo_rewind(thread))["restored"] == 1
            fork = await kun.fork(thread, at_turn=1)
            assert [t["turn_id"] for t in (await kun.thread(fork))["turns"]] == [first]
            assert "look" in await kun.transcript(thread)
            assert (await kun.log(thread)).count(b"\n") == a.log_state(thread).last_seq
            assert len((await kun.usage(thread, fork))["threads"]) == 2
            with pytest.raises(ApiError) as missing:
                await kun.thread("thr_nope")
            assert missing.value.status == 404
        uploaded = a.log_state(thread).turns[0].items[0]
        assert uploaded.attachments[0].mime_type == "image/png"  # type: ignore[union-attr]


async def _pending_approvals(kun: AsyncKunClient, thread: str) -> list[str]:
    with anyio.fail_after(10):
        while True:
            pending: list[str] = (await kun.thread(thread))["pending_approvals"]
            if pending:
                return pending
            await anyio.sleep(0.01)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def _server(tmp_path: Path, token: str) -> Iterator[str]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    model = ScriptedModelClient([text_reply("hello")])
    app = create_app(lambda: backend_over(tmp_path / "home", model), token=token)
    port = _free_port()
    server = server_for(app, "127.0.0.1", port, log_level="warning")
    thread = threading.Thread(target=server.run)
    thread.start()
    try:
        for _ in range(500):
            if server.started:
                break
            threading.Event().wait(0.01)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


def test_the_sync_client_against_a_real_server(tmp_path: Path) -> None:
    with _server(tmp_path, token="t0ken") as url:
        with KunClient(url) as anonymous, pytest.raises(ApiError) as refused:
            anonymous.threads()
        assert refused.value.status == 401
        with KunClient(url, token="t0ken") as kun:
            thread = kun.create_thread(workspace=str(tmp_path / "ws"), title="sync")
            turn = kun.start_turn(thread, "hi")
            assert kun.wait_turn(thread, turn, timeout=10, poll=0.01)["status"] == "completed"
            assert kun.threads(limit=1)["threads"][0]["title"] == "sync"
            assert kun.update_thread(thread, reasoning_effort="low")["reasoning_effort"] == "low"
            with pytest.raises(ApiError) as idle:
                kun.steer(thread, turn, "late")
            assert idle.value.code == "turn_not_running"
