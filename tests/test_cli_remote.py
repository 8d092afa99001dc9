"""``kun --server URL ...`` as a user runs it: a real ``kun serve`` on
127.0.0.1 (its model the fake provider on another port) driven by the real
``kun`` CLI in subprocesses, whose own home stays empty.

A tool-using turn run remotely is in the server's log and printed as a
local run prints it; remote replay, threads and usage print what the local
commands print for the same thread; ``run --json`` prints the log's lines;
an event stream cut again and again is resumed with ``Last-Event-ID``, every
event and every character of the answer once; an approval is answered over
HTTP; Ctrl-C interrupts the turn on the server; no server, a missing or
wrong token and a misplaced ``--server`` are each one line and exit 1."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import httpx
import pytest
from anyio.abc import SocketAttribute, SocketStream

from kun.contracts import events as ev
from kun.contracts.model import CompletedChunk, TextDeltaChunk
from kun.domain.reduce import replay
from kun.model.scripted import tool_reply
from kun.store.jsonl import JsonlEventStore
from kun.testing.fake_provider import FakeProvider, FakeResponse
from tests.terminal_support import finish, plain, spawn

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

ANSWER = FakeResponse(
    chunks=(TextDeltaChunk(text="a.py prints a."), CompletedChunk(stop_reason="stop"))
)
READ_A = FakeResponse(chunks=tuple(tool_reply("read_file", {"path": "a.py"})))
WORDS = "".join(f"word{i} " for i in range(40))
SLOW_ANSWER = FakeResponse(
    chunks=(
        *(TextDeltaChunk(text=f"word{i} ") for i in range(40)),
        CompletedChunk(stop_reason="stop"),
    ),
    per_event=True,
    piece_delay=0.04,
)
START_SECONDS = 20.0
RUN_SECONDS = 60.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _environ(**extra: str) -> dict[str, str]:
    dropped = ("KUN_SERVER", "KUN_TOKEN", "KUN_HOME", "KUN_CONFIG")
    environ = {
        k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k not in dropped
    }
    return {**environ, **extra}


@dataclass
class Served:
    url: str
    home: Path
    workspace: Path
    client_home: Path
    provider: FakeProvider

    def log(self, thread: str) -> bytes:
        return (self.home / "threads" / thread / "events.jsonl").read_bytes()

    def events(self, thread: str) -> list[ev.Event]:
        return list(JsonlEventStore(self.home).read(thread, mode="strict"))

    async def kun(
        self, *args: str, server: str | None = None, **env: str
    ) -> subprocess.CompletedProcess[bytes]:
        """``kun --server <this server> ARGS`` in the workspace, with a home
        of its own (which must stay empty)."""
        command = [sys.executable, "-m", "kun", "--server", server or self.url, *args]
        with anyio.fail_after(RUN_SECONDS):
            return await anyio.run_process(
                command, cwd=self.workspace, check=False, stdin=subprocess.DEVNULL,
                env=_environ(KUN_HOME=str(self.client_home), **env),
            )  # fmt: skip

    async def local(self, *args: str) -> subprocess.CompletedProcess[bytes]:
        """The same command on the server's home, without the server."""
        command = [sys.executable, "-m", "kun", *args, "--home", str(self.home)]
        return await anyio.run_process(command, cwd=self.workspace, check=False, env=_environ())


@asynccontextmanager
async def serving(
    tmp_path: Path, script: list[FakeResponse], *args: str, runtime: str = "", **env: str
) -> AsyncIterator[Served]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.py").write_text("print('a')\n")
    port = _free_port()
    async with FakeProvider(script, format="chat_completions") as provider:
        config = tmp_path / "kun.toml"
        config.write_text(
            'default_provider = "fake"\n\n[providers.fake]\n'
            f'base_url = "{provider.base_url}"\nendpoint_format = "chat_completions"\n'
            'default_model = "fake-model"\n' + (f"\n[runtime]\n{runtime}" if runtime else "")
        )
        command = [
            sys.executable, "-m", "kun", "serve", "--port", str(port), "--config", str(config),
            "--home", str(tmp_path / "home"), *args,
        ]  # fmt: skip
        with (tmp_path / "serve.out").open("wb") as out:
            process = await anyio.open_process(
                command, env=_environ(**env), cwd=tmp_path, stdin=subprocess.DEVNULL,
                stdout=out, stderr=subprocess.STDOUT,
            )  # fmt: skip
        url = f"http://127.0.0.1:{port}"
        async with process:
            try:
                await _until_listening(process, url)
                yield Served(url, tmp_path / "home", workspace, tmp_path / "client", provider)
            finally:
                process.terminate()
                with anyio.move_on_after(10):
                    await process.wait()
                if process.returncode is None:
                    process.kill()


async def _until_listening(process: anyio.abc.Process, url: str) -> None:
    async with httpx.AsyncClient(base_url=url) as client:
        with anyio.fail_after(START_SECONDS):
            while True:
                try:
                    await client.get("/openapi.json")
                    return
                except httpx.TransportError:
                    assert process.returncode is None, "kun serve exited"
                    await anyio.sleep(0.05)


def _thread_of(result: subprocess.CompletedProcess[bytes]) -> str:
    """The thread named by ``kun run``'s closing line."""
    last = result.stderr.decode().strip().splitlines()[-1]
    assert last.startswith("thread "), result.stderr.decode()
    return last.split()[1]


def _one_line(result: subprocess.CompletedProcess[bytes]) -> str:
    assert result.returncode == 1, result
    stderr = result.stderr.decode()
    assert stderr.count("\n") == 1 and stderr.startswith("kun: error: "), stderr
    assert result.stdout == b""
    return stderr


async def test_a_tool_using_turn_runs_on_the_server_and_reads_as_locally(tmp_path: Path) -> None:
    async with serving(tmp_path, [READ_A, ANSWER]) as s:
        ran = await s.kun("run", "what does a.py do?")
        assert ran.returncode == 0, ran.stderr.decode()
        thread = _thread_of(ran)
        shown = ran.stdout.decode()
        assert '-> read_file({"path":"a.py"})' in shown
        assert "   ok: 1 print('a')" in shown
        assert shown.count("a.py prints a.") == 1
        assert "turn completed" in shown
        state = replay(s.events(thread))
        assert [t.status for t in state.turns] == ["completed"]
        assert ran.stderr.decode().endswith(f"turn {state.turns[0].turn_id} completed\n")
        assert state.settings.workspace == str(s.workspace.resolve())
        for args in (
            ("replay", thread),
            ("replay", thread, "--json"),
            ("replay", thread, "--until-seq", "6"),
            ("threads",),
            ("threads", "--json"),
            ("usage", thread, "--json"),
            ("usage", thread),
        ):
            remote, local = await s.kun(*args), await s.local(*args)
            assert remote.returncode == local.returncode == 0, remote.stderr
            assert remote.stdout == local.stdout, args
            assert remote.stdout
    assert not s.client_home.exists()


async def test_run_json_prints_the_log_lines(tmp_path: Path) -> None:
    async with serving(tmp_path, [READ_A, ANSWER, ANSWER]) as s:
        first = await s.kun("run", "what does a.py do?", "--json")
        assert first.returncode == 0, first.stderr.decode()
        thread = _thread_of(first)
        assert first.stdout == s.log(thread)
        before = len(s.log(thread))
        again = await s.kun("run", "and again", "--json", "--thread", thread, "--model", "m2")
        assert again.returncode == 0, again.stderr.decode()
        switched, *turn = s.log(thread)[before:].splitlines(keepends=True)
        assert b'"kind":"thread_updated"' in switched  # before the turn, as kun run prints
        assert again.stdout == b"".join(turn) and turn[0].startswith(b'{"kind":"turn_started"')
        assert [r.json["model"] for r in s.provider.requests][-1] == "m2"


@dataclass
class CuttingProxy:
    """A TCP proxy to the server that cuts the n-th event stream right after
    the first piece of its response holding ``markers[n]``, as a flaky
    network would (mid-frame, as often as not)."""

    target: int
    markers: list[bytes]
    delay: float = 0.0
    """Seconds each event stream's request is held before it is sent on."""
    port: int = 0
    cut: int = 0
    stream_requests: list[bytes] = field(default_factory=list)

    async def handle(self, client: SocketStream) -> None:
        """Any request on a kept-alive connection may be an event stream:
        each one arms the cut for the response that follows it."""
        marker: list[bytes | None] = [None]

        async def requests(upstream: SocketStream) -> None:
            with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                async for chunk in client:
                    if b"/events" in chunk.split(b"\r\n", 1)[0]:
                        self.stream_requests.append(chunk)
                        n = len(self.stream_requests)
                        marker[0] = self.markers[n - 1] if n <= len(self.markers) else None
                        await anyio.sleep(self.delay)
                    await upstream.send(chunk)

        async with client, await anyio.connect_tcp("127.0.0.1", self.target) as upstream:
            async with anyio.create_task_group() as tg:
                tg.start_soon(requests, upstream)
                if await _pipe(upstream, client, marker):
                    self.cut += 1
                tg.cancel_scope.cancel()


async def _pipe(source: SocketStream, sink: SocketStream, marker: list[bytes | None]) -> bool:
    """Forward until the end, or until a piece holding the armed marker
    (then half of that piece) is sent: whether it cut."""
    try:
        async for chunk in source:
            armed = marker[0]
            if armed is not None and armed in chunk:
                await sink.send(chunk[: chunk.index(armed) + len(armed) // 2])
                return True
            await sink.send(chunk)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.EndOfStream):
        pass
    return False


@asynccontextmanager
async def cutting(
    url: str, markers: list[bytes], delay: float = 0.0
) -> AsyncIterator[CuttingProxy]:
    proxy = CuttingProxy(int(url.rsplit(":", 1)[1]), markers, delay)
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    proxy.port = listener.extra(SocketAttribute.local_port)
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, proxy.handle)
        yield proxy
        tg.cancel_scope.cancel()


@pytest.mark.parametrize("as_json", [True, False], ids=["json", "text"])
async def test_a_cut_stream_resumes_with_last_event_id_exactly_once(
    tmp_path: Path, as_json: bool
) -> None:
    text = b"event: assistant_text_delta"
    first = b"event: tool_call_started" if as_json else b"event: preview"
    markers = [first, text, text]  # a durable delta cut in half comes again
    async with (
        serving(tmp_path, [READ_A, SLOW_ANSWER]) as s,
        cutting(s.url, markers) as proxy,
    ):
        json = ("--json",) if as_json else ()
        ran = await s.kun("run", "a.py?", *json, server=f"http://127.0.0.1:{proxy.port}")
        assert ran.returncode == 0, ran.stderr.decode()
        thread = _thread_of(ran)
        log = s.log(thread)
    assert proxy.cut == 3 and len(proxy.stream_requests) == 4
    assert all(b"last-event-id: " in r.lower() for r in proxy.stream_requests[1:])
    if as_json:
        assert ran.stdout == log
    else:
        shown = ran.stdout.decode()
        assert shown.count(WORDS.strip()) == 1 and shown.count("word7 ") == 1
        assert shown.count("-> read_file(") == 1 and shown.count("turn completed") == 1


async def test_an_approval_is_answered_over_http(tmp_path: Path) -> None:
    async with serving(tmp_path, [READ_A, ANSWER]) as s:
        ran = await s.kun("run", "a.py?", "--approval", "always")
        thread = _thread_of(ran)
        events = s.events(thread)
    assert ran.returncode == 0, ran.stderr.decode()
    assert "approval needed: " in ran.stdout.decode()
    assert "   denied: no terminal to ask on" in ran.stdout.decode()
    resolved = [e for e in events if isinstance(e, ev.ApprovalResolved)]
    assert [(r.decision, r.reason) for r in resolved] == [("denied", "no terminal to ask on")]


async def test_ctrl_c_interrupts_the_turn_on_the_server(tmp_path: Path) -> None:
    stalled = FakeResponse(chunks=ANSWER.chunks, stalls=((1, 60.0),))
    async with serving(tmp_path, [stalled]) as s:
        command = [sys.executable, "-m", "kun", "--server", s.url, "run", "hang"]
        out, err = tmp_path / "run.out", tmp_path / "run.err"
        with out.open("wb") as stdout_file, err.open("wb") as stderr_file:
            process = await anyio.open_process(
                command, cwd=s.workspace, stdin=subprocess.DEVNULL, stdout=stdout_file,
                stderr=stderr_file, env=_environ(KUN_HOME=str(s.client_home)),
            )  # fmt: skip
        async with process:
            with anyio.fail_after(START_SECONDS):
                while not s.provider.requests:  # noqa: ASYNC110 (another process's request)
                    await anyio.sleep(0.05)
            process.send_signal(signal.SIGINT)
            with anyio.fail_after(20):
                code = await process.wait()
        stdout, stderr = out.read_text(), err.read_text()
        thread = stderr.strip().splitlines()[-1].split()[1]
        state = replay(s.events(thread))
    assert code == 1
    assert "interrupting the turn..." in stdout and "turn aborted" in stdout
    assert stderr.endswith(" aborted\n")
    assert [t.status for t in state.turns] == ["aborted"]


async def test_no_server_is_one_line_for_every_command(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{_free_port()}"
    nobody = Served(url, tmp_path, tmp_path, tmp_path / "client", FakeProvider())
    for args in (("run", "hi"), ("replay", "thr_x"), ("threads",), ("usage", "thr_x")):
        stderr = _one_line(await nobody.kun(*args))
        assert stderr == f"kun: error: nothing is listening at {url} — is `kun serve` running?\n"


async def test_a_missing_or_wrong_token_is_one_line(tmp_path: Path) -> None:
    async with serving(tmp_path, [], "--token-env", "SERVE_TOKEN", SERVE_TOKEN="s3cret") as s:
        missing = _one_line(await s.kun("threads"))
        assert "wants a token: put it in $KUN_TOKEN" in missing
        wrong = _one_line(await s.kun("run", "hi", KUN_TOKEN="nope"))
        assert f"the server at {s.url} refused the token in $KUN_TOKEN" in wrong
        named = _one_line(await s.kun("--token-env", "MINE", "threads", MINE="guess"))
        assert "refused the token in $MINE" in named
        right = await s.kun("--token-env", "MINE", "threads", MINE="s3cret")
        assert right.returncode == 0 and right.stdout.startswith(b"no threads under ")
        assert not (s.home / "threads").exists() or not any((s.home / "threads").iterdir())


async def test_server_options_that_do_not_apply_are_one_line(tmp_path: Path) -> None:
    nobody = Served("http://127.0.0.1:9", tmp_path, tmp_path, tmp_path / "c", FakeProvider())
    demo = _one_line(await nobody.kun("demo"))
    assert (
        "--server works with the session and compact, export, fork, gc, import, interrupt, "
        "reconcile, replay, restore, rewind, rm, run, steer, threads, trash, usage; "
        "not with kun demo" in demo
    )
    home = _one_line(await nobody.kun("replay", "thr_x", "--home", str(tmp_path)))
    assert "--home does not go with --server" in home
    unset = _one_line(await nobody.kun("--token-env", "UNSET_VAR", "threads"))
    assert "$UNSET_VAR is not set or empty" in unset


async def test_an_answer_streamed_at_once_is_shown_whole(tmp_path: Path) -> None:
    """The stream is open before the turn starts, however slow it is to
    open: one opened after the model's first words would get previews that
    are not a prefix of their durable delta, and the text would come out
    garbled."""
    async with serving(tmp_path, [SLOW_ANSWER]) as s, cutting(s.url, [], delay=0.5) as proxy:
        ran = await s.kun("run", "talk", server=f"http://127.0.0.1:{proxy.port}")
    assert ran.returncode == 0, ran.stderr.decode()
    assert ran.stdout.decode().startswith(WORDS + "\nturn completed")


async def test_an_approval_asked_at_the_terminal_is_answered_always_over_http(
    tmp_path: Path,
) -> None:
    """ "always" works over a server too: the rule reaches the server's
    thread with the answer (the view speaks Kun, whichever adapter)."""
    write = FakeResponse(
        chunks=tuple(tool_reply("write_file", {"path": "b.py", "content": "new\n"}))
    )
    async with serving(tmp_path, [write, ANSWER]) as s:
        (s.workspace / "b.py").write_text("old\n")

        def drive() -> tuple[int | None, str, str]:
            args = ["--server", s.url, "run", "write b.py", "--approval", "untrusted"]
            child = spawn(args, cwd=s.workspace)
            child.expect(r"allow\? \[y/a/N\]")
            asked = plain(child.before)
            child.sendline("a")
            code, text = finish(child)
            return code, asked, text

        code, asked, text = await anyio.to_thread.run_sync(drive)
        thread = next(line for line in text.splitlines() if line.startswith("thread "))
        events = s.events(thread.split()[1])
    assert code == 0, text
    assert "approval needed: write_file b.py" in asked and "+new" in asked
    assert "a always for this thread: write_file" in asked
    assert "always allowed on this thread: write_file" in text
    assert "turn completed" in text and (s.workspace / "b.py").read_text() == "new\n"
    resolved = [e for e in events if isinstance(e, ev.ApprovalResolved)]
    assert [r.decision for r in resolved] == ["approved"]
    rules = [e.always_allow for e in events if isinstance(e, ev.ThreadUpdated) and e.always_allow]
    assert [[rule.tool for rule in r] for r in rules] == [["write_file"]]


async def test_run_goal_over_the_server_follows_the_servers_resumes(tmp_path: Path) -> None:
    """``kun --server URL run --goal``: the server resumes the goal, and the
    command shows each resumed turn until none is pending (here: the model
    completes the goal), exit status 0 as locally."""
    script = [
        ANSWER,
        FakeResponse(chunks=tuple(tool_reply("update_goal", {"status": "complete"}))),
        FakeResponse(chunks=(TextDeltaChunk(text="All done."), CompletedChunk())),
    ]
    runtime = "goal_resume_base_seconds = 0.1\n"
    async with serving(tmp_path, script, runtime=runtime) as s:
        ran = await s.kun("run", "--goal", "make a.py print A")
        thread = _thread_of(ran)
        events = s.events(thread)
    assert ran.returncode == 0, ran.stderr.decode()
    out, err = ran.stdout.decode(), ran.stderr.decode()
    assert "goal active: resuming in 0.1 s (attempt 1/5)" in out
    assert "All done." in out and "goal complete" in out + err
    started = [e for e in events if isinstance(e, ev.TurnStarted)]
    assert len(started) == 2
