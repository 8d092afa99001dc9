"""``kun.client``: the async client against the app in process, the sync
one against a real uvicorn server on 127.0.0.1 (a thread of this test);
arguments and answers are kun's Structs."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import httpx
import pytest

from kun.app.requests import CreateThread, StartTurn, UpdateThread
from kun.client import AsyncKunClient, Conflict, KunClient, NotFound, Unauthorized, Unreachable
from kun.contracts import events as ev
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
            made = await kun.create_thread(
                CreateThread(workspace=str(a.workspace), approval_policy="auto")
            )
            thread = made.thread_id
            image = tmp_path / "dot.png"
            image.write_bytes(PNG)
            attached = StartTurn(text="look", attachments=(await kun.attach(image),))
            first = (await kun.start_turn(thread, attached)).turn_id
            with anyio.fail_after(10):
                assert (await kun.wait_turn(thread, first, poll=0.01)).status == "completed"
            second = (await kun.start_turn(thread, StartTurn(text="write c.py"))).turn_id
            (approval,) = await _pending_approvals(kun, thread)
            await kun.answer_approval(approval, "approved")
            with pytest.raises(Conflict) as conflict:
                await kun.answer_approval(approval, "denied")
            assert (conflict.value.status, conflict.value.code) == (409, "not_pending")
            with anyio.fail_after(10):
                await kun.wait_turn(thread, second, poll=0.01)
            assert (await kun.rewind(thread, 2)).turn_id == second
            assert (await kun.undo_rewind(thread)).restored == 1
            fork = (await kun.fork(thread, at_turn=1)).thread_id
            assert [t.turn_id for t in (await kun.thread(fork)).turns] == [first]
            assert "look" in await kun.transcript(thread)
            assert (await kun.log(thread)).count(b"\n") == a.log_state(thread).last_seq
            assert len((await kun.usage(thread, fork)).threads) == 2
            assert (await kun.usage(thread)).threads[0].thread_id == thread
            with pytest.raises(NotFound) as missing:
                await kun.thread("thr_nope")
            assert missing.value.status == 404
        uploaded = a.log_state(thread).turns[0].items[0]
        assert uploaded.attachments[0].mime_type == "image/png"  # type: ignore[union-attr]


@pytest.mark.anyio
async def test_following_a_turn_on_a_real_server_gives_each_event_once_in_order(
    tmp_path: Path,
) -> None:
    with _server(tmp_path, token="t0ken") as url:
        async with AsyncKunClient(url, token="t0ken") as kun:
            made = await kun.create_thread(CreateThread(workspace=str(tmp_path / "ws")))
            thread = made.thread_id
            seqs: list[int] = []
            async with kun.follow(thread, previews=True) as feed:
                turn = await kun.start_turn(thread, StartTurn(text="hi"))
                with anyio.fail_after(10):
                    async for event in feed:
                        if event.seq:
                            seqs.append(event.seq)
                        if isinstance(event, ev.TurnCompleted):
                            break
            last = (await kun.thread(thread)).last_seq
            assert seqs == list(range(1, last + 1))
            assert (await kun.turn(thread, turn.turn_id)).status == "completed"


async def _pending_approvals(kun: AsyncKunClient, thread: str) -> list[str]:
    with anyio.fail_after(10):
        while True:
            pending = list((await kun.thread(thread)).pending_approvals)
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
        with KunClient(url) as anonymous, pytest.raises(Unauthorized) as refused:
            anonymous.threads()
        assert refused.value.status == 401
        with KunClient(url, token="t0ken") as kun:
            made = kun.create_thread(CreateThread(workspace=str(tmp_path / "ws"), title="sync"))
            thread = made.thread_id
            turn = kun.start_turn(thread, StartTurn(text="hi")).turn_id
            assert kun.wait_turn(thread, turn, timeout=10, poll=0.01).status == "completed"
            assert kun.threads(limit=1).threads[0].title == "sync"
            assert [t.thread_id for t in kun.all_threads(page=1)] == [thread]
            changed = kun.update_thread(thread, UpdateThread(reasoning_effort="low"))
            assert changed.reasoning_effort == "low"
            with pytest.raises(Conflict) as idle:
                kun.steer(thread, turn, "late")
            assert idle.value.code == "turn_not_running"
            with kun.follow(thread) as feed:
                kinds = [type(event).__name__ for _, event in zip(range(2), feed, strict=False)]
            assert kinds == ["ThreadCreated", "TurnStarted"]


def test_nothing_listening_is_one_line_saying_so() -> None:
    url = f"http://127.0.0.1:{_free_port()}"
    with KunClient(url) as kun, pytest.raises(Unreachable) as down:
        kun.threads()
    assert str(down.value) == f"nothing is listening at {url} — is `kun serve` running?"
