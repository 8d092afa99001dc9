"""The SSE streams through a real uvicorn server on 127.0.0.1.

The server, the TurnService and its scripted model run on an event loop in a
background thread (an anyio blocking portal); the tests are plain functions
driving it with a synchronous httpx client, as a separate program would.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from contextlib import ExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx
import msgspec
import pytest
import uvicorn
from anyio.from_thread import BlockingPortal, start_blocking_portal
from starlette.applications import Starlette

from kun.app.local import LocalKun
from kun.contracts import events as ev
from kun.contracts.model import CompletedChunk, TextDeltaChunk
from kun.server.stream import StreamSettings, stream_routes
from kun.store.codec import ENCODER
from tests.runtime.support import Harness, harness

SEND_BUFFER = 64 * 1024
FAST = StreamSettings(heartbeat=30.0, lag_timeout=5.0, drain_timeout=5.0)


# -- the server ------------------------------------------------------------------


class _Server(uvicorn.Server):
    """uvicorn with readiness and exit as events, and without its signal
    handlers (the test process owns them)."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.ready = anyio.Event()
        self.exit = anyio.Event()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        self.ready.set()

    async def main_loop(self) -> None:
        await self.exit.wait()

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


@asynccontextmanager
async def serve(app: Starlette) -> AsyncIterator[str]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    # Accepted sockets inherit a fixed send buffer instead of autotuning up
    # to megabytes, so a client that stops reading stalls the server soon.
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        app, log_config=None, lifespan="off", ws="none", http="h11", timeout_graceful_shutdown=2
    )
    server = _Server(config)
    with sock:
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.serve, [sock])
            await server.ready.wait()
            try:
                yield f"http://127.0.0.1:{port}"
            finally:
                server.should_exit = True
                server.exit.set()


@dataclass
class Served:
    """A running server over a harness's service, driven from the test thread."""

    h: Harness
    app: Starlette
    url: str
    portal: BlockingPortal

    @property
    def thread_id(self) -> str:
        return self.h.thread_id

    def events_url(self, thread_id: str | None = None) -> str:
        return f"{self.url}/v1/threads/{thread_id or self.thread_id}/events"

    def run_turn(self, text: str = "go") -> None:
        self.portal.call(self.h.run, text)

    def start_turn(self, text: str = "go") -> str:
        return self.portal.call(self.h.service.start_turn, self.thread_id, text)

    def wait_turn(self, turn_id: str) -> None:
        async def wait() -> None:
            with anyio.fail_after(30):
                await self.h.service.wait_turn(self.thread_id, turn_id)

        self.portal.call(wait)

    def warn(self, count: int, size: int = 10, thread_id: str | None = None) -> None:
        """Append ``count`` warnings of ``size`` characters (outside turns)."""

        async def write() -> None:
            for i in range(count):
                draft = ev.WarningEvent(
                    seq=0, at=0, thread_id="", code="w", message=f"{i:06d}" * (size // 6 + 1)
                )
                await self.h.service.recorder.record(
                    thread_id or self.thread_id, draft, durable=False
                )
            await self.h.service.recorder.store.sync(thread_id or self.thread_id)

        self.portal.call(write)

    def shutdown(self) -> None:
        self.portal.call(self.app.state.shutdown.set)

    def log(self, thread_id: str | None = None) -> list[bytes]:
        """The thread's events as kun encodes them (the log's lines, with
        ``thread_id``, which a log line may leave out)."""
        store = self.h.service.recorder.store
        return [ENCODER.encode(e) for e in store.read(thread_id or self.thread_id)]

    def last_seq(self) -> int:
        return len(self.log())


def text_turn(*parts: str) -> list[Any]:
    return [*(TextDeltaChunk(text=p) for p in parts), CompletedChunk(stop_reason="stop")]


@asynccontextmanager
async def _running(
    tmp_path: Path,
    script: Iterable[Any],
    settings: StreamSettings,
    delay: float,
    portal: BlockingPortal,
) -> AsyncIterator[Served]:
    async with harness(tmp_path, script, delay=delay) as h:
        app = Starlette(routes=stream_routes(settings))
        app.state.service = h.service
        app.state.kun = LocalKun(h.home, h.service.recorder, h.service)
        app.state.shutdown = anyio.Event()
        async with serve(app) as url:
            yield Served(h, app, url, portal)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Callable[..., Served]]:
    """``served(script, settings=..., delay=...)`` starts one server."""
    with start_blocking_portal() as portal, ExitStack() as stack:

        def start(
            script: Iterable[Any] = (), settings: StreamSettings = FAST, delay: float = 0.0
        ) -> Served:
            cm = _running(tmp_path, script, settings, delay, portal)
            return stack.enter_context(portal.wrap_async_context_manager(cm))

        yield start


# -- the client ------------------------------------------------------------------


@dataclass
class Message:
    """One SSE message as a client parses it (comments kept, for the tests)."""

    fields: dict[str, str] = field(default_factory=dict)
    comments: list[str] = field(default_factory=list)

    @property
    def seq(self) -> int | None:
        return int(self.fields["id"]) if "id" in self.fields else None


def messages(lines: Iterable[str]) -> Iterator[Message]:
    current = Message()
    for line in lines:
        if not line:
            if current.fields or current.comments:
                yield current
            current = Message()
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if not name:
            current.comments.append(value)
        else:
            assert name not in current.fields, f"field {name} twice in one message"
            current.fields[name] = value
    assert not current.fields and not current.comments, "stream ended inside a message"


def client() -> httpx.Client:
    return httpx.Client(timeout=httpx.Timeout(20.0))


def follow(
    url: str,
    *,
    headers: dict[str, str] | None = None,
    stop: Callable[[Message], bool] | None = None,
) -> list[Message]:
    """Read ``url``'s messages until it ends or ``stop`` says so (then
    disconnect)."""
    got: list[Message] = []
    with client() as c, c.stream("GET", url, headers=headers) as response:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")
        for message in messages(response.iter_lines()):
            got.append(message)
            if stop is not None and stop(message):
                break
    return got


def data_of(got: list[Message]) -> list[bytes]:
    return [m.fields["data"].encode() for m in got if "data" in m.fields]


def check_event_messages(got: list[Message]) -> None:
    for m in got:
        if "data" in m.fields:
            event: ev.Event = msgspec.json.decode(m.fields["data"], type=ev.Event)
            assert m.fields["event"] == type(event).__struct_config__.tag
            assert m.seq == event.seq


# -- tests -----------------------------------------------------------------------


def test_backlog_then_live_byte_for_byte(served: Callable[..., Served]) -> None:
    s = served([text_turn("one ", "two"), text_turn("three ", "four")])
    s.run_turn("first")
    backlog_end = s.last_seq()
    turn = s.start_turn("second")
    s.wait_turn(turn)
    got = follow(s.events_url() + f"?until={s.last_seq()}")
    assert got[0].fields == {"retry": str(FAST.retry_ms)}
    assert data_of(got) == s.log()
    assert [m.seq for m in got[1:]] == list(range(1, s.last_seq() + 1))
    assert backlog_end < s.last_seq()
    check_event_messages(got)


def test_live_events_arrive_while_following(served: Callable[..., Served]) -> None:
    s = served([text_turn("a", "b", "c")], delay=0.05)
    start = s.last_seq()
    seen: list[Message] = []

    def stop(message: Message) -> bool:
        if message.seq == start:
            s.start_turn("go")
        return message.fields.get("event") == "turn_completed"

    seen = follow(s.events_url(), stop=stop)
    assert data_of(seen) == s.log()[: len(data_of(seen))]
    assert data_of(seen)[-1] in s.log()


def test_resume_with_last_event_id_is_exactly_once(served: Callable[..., Served]) -> None:
    s = served([text_turn(*(f"part {i} " for i in range(20)))], delay=0.05)
    turn = s.start_turn("go")
    first = follow(s.events_url(), stop=lambda m: m.fields.get("event") == "assistant_text_delta")
    last = first[-1].seq
    assert last is not None
    s.wait_turn(turn)
    s.warn(3)  # appended while the client is away, after the turn
    rest = follow(s.events_url() + f"?until={s.last_seq()}", headers={"Last-Event-ID": str(last)})
    assert rest[1].seq == last + 1
    assert data_of(first) + data_of(rest) == s.log()


def test_last_event_id_wins_over_after(served: Callable[..., Served]) -> None:
    s = served()
    s.warn(5)
    got = follow(s.events_url() + "?after=1&until=6", headers={"Last-Event-ID": "3"})
    assert [m.seq for m in got[1:]] == [4, 5, 6]
    got = follow(s.events_url() + "?after=4&until=6")
    assert [m.seq for m in got[1:]] == [5, 6]


def test_until_ends_the_stream_and_past_it_is_204(served: Callable[..., Served]) -> None:
    s = served()
    s.warn(5)
    got = follow(s.events_url() + "?until=2")
    assert [m.seq for m in got[1:]] == [1, 2]
    with client() as c:
        assert c.get(s.events_url() + "?until=2", headers={"Last-Event-ID": "2"}).status_code == 204


def test_heartbeat_while_idle(served: Callable[..., Served]) -> None:
    s = served(settings=StreamSettings(heartbeat=0.1))
    got = follow(
        s.events_url(), stop=lambda m: len(m.comments) > 0 and m.comments[0] == "heartbeat"
    )
    assert [m.seq for m in got if m.seq is not None] == [1]
    assert got[-1].comments == ["heartbeat"]


@pytest.mark.parametrize(
    ("path", "headers", "status", "field"),
    [
        ("/v1/threads/thr_nope/events", {}, 404, "thread_id"),
        ("/v1/threads/..%2Fetc/events", {}, 400, "thread_id"),
        ("/v1/threads/a%2Fb/events", {}, 400, "thread_id"),
        ("/v1/threads/{t}/events?after=-1", {}, 400, "after"),
        ("/v1/threads/{t}/events?after=abc", {}, 400, "after"),
        ("/v1/threads/{t}/events?until=1.5", {}, 400, "until"),
        ("/v1/threads/{t}/events", {"Last-Event-ID": "x"}, 400, "Last-Event-ID"),
        ("/v1/threads/{t}/events?from=3", {}, 400, "from"),
        ("/v1/events?after=3", {}, 400, "after"),
        ("/v1/threads/{t}/events?live=yes", {}, 400, "live"),
        ("/v1/threads/{t}/events?after=2", {}, 400, "after"),
        ("/v1/threads/{t}/events", {"Last-Event-ID": "9"}, 400, "Last-Event-ID"),
    ],
)
def test_bad_requests_are_json_4xx(
    served: Callable[..., Served], path: str, headers: dict[str, str], status: int, field: str
) -> None:
    s = served()
    with client() as c:
        response = c.get(s.url + path.format(t=s.thread_id), headers=headers)
    assert response.status_code == status
    assert response.json()["error"]["field"] == field


def test_shutdown_ends_open_streams_cleanly(served: Callable[..., Served]) -> None:
    s = served()
    s.warn(2)

    def shut_down_at_three(message: Message) -> bool:
        if message.seq == 3:
            s.shutdown()
        return False

    got = follow(s.events_url(), stop=shut_down_at_three)
    assert [m.seq for m in got if m.seq] == [1, 2, 3]
    assert got[-1].comments == ["the server is shutting down; resume with Last-Event-ID: 3"]


def test_a_stream_asked_for_while_stopping_says_when_to_come_back(
    served: Callable[..., Served],
) -> None:
    """Not a 503, which an ``EventSource`` takes as final: a stream that
    sets ``retry:`` and ends, so the browser reconnects to the restarted
    server from where it was."""
    s = served(settings=StreamSettings(retry_ms=4321))
    s.warn(2)
    s.shutdown()
    with client() as c:
        for url, headers, said in (
            (s.events_url(), {"Last-Event-ID": "2"}, "resume with Last-Event-ID: 2"),
            (s.url + "/v1/events", {}, "the server is shutting down"),
        ):
            response = c.get(url, headers=headers)
            assert response.status_code == 200, response.text
            assert response.headers["content-type"] == "text/event-stream; charset=utf-8"
            assert response.headers["cache-control"] == "no-store"
            assert response.text.startswith("retry: 4321\n\n: ")
            assert said in response.text and "data:" not in response.text


def test_head_answers_without_streaming(served: Callable[..., Served]) -> None:
    s = served()
    with client() as c:
        for url in (s.events_url(), s.url + "/v1/events"):
            response = c.head(url)
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
