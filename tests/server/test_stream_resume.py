"""Exactly once across disconnects: a consumer that stalls is dropped without
slowing the writer and resumes with nothing lost; random disconnect points
never lose or repeat an event."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kun.contracts.threads import ThreadSettings
from kun.server.stream import StreamSettings
from tests.server.test_stream import (
    Message,
    Served,
    client,
    data_of,
    follow,
    messages,
    served,
    text_turn,
)

__all__ = ["served"]


@pytest.fixture
def server(served: Callable[..., Served]) -> Served:
    """One server for all the examples of a property (each example makes
    its own thread)."""
    return served()


STALL = StreamSettings(queue_bytes=32 * 1024, lag_timeout=0.3, drain_timeout=30.0, heartbeat=30.0)
CHUNK = 4000
CHUNKS = 400
"""1.6 MB of answer: many times what the socket buffers, uvicorn's write
buffer and the queue hold together (see ``SEND_BUFFER``)."""


def stalled_request(s: Served, path: str) -> socket.socket:
    """Send a request and read nothing: an HTTP/1.0 client with a tiny
    receive buffer, whose response ends when the server closes."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    host, port = s.url.removeprefix("http://").split(":")
    sock.connect((host, int(port)))
    sock.sendall(f"GET {path} HTTP/1.0\r\nHost: {host}\r\n\r\n".encode())
    return sock


def read_all(sock: socket.socket) -> list[Message]:
    sock.settimeout(20)
    received = bytearray()
    while chunk := sock.recv(65536):
        received += chunk
    sock.close()
    head, _, body = bytes(received).partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200"), head
    return list(messages(body.decode().split("\n")))


def test_a_stalled_consumer_is_dropped_without_slowing_the_turn_and_resumes(
    served: Callable[..., Served],
) -> None:
    s = served([text_turn(*(f"{i:05d}" * (CHUNK // 5) for i in range(CHUNKS)))], settings=STALL)
    stalled = stalled_request(s, f"/v1/threads/{s.thread_id}/events")
    turn = s.start_turn("write a lot")
    s.wait_turn(turn)  # the turn ends while the consumer reads nothing
    last = s.last_seq()
    followers = s.h.service.recorder.bus.followers
    deadline = time.monotonic() + 20
    while s.portal.call(followers, s.thread_id) and time.monotonic() < deadline:
        time.sleep(0.05)  # until the server gives up on the consumer

    got = read_all(stalled)
    seqs = [m.seq for m in got if m.seq is not None]
    assert seqs == list(range(1, len(seqs) + 1))
    dropped_at = seqs[-1]
    assert dropped_at < last
    assert got[-1].comments == [f"fell behind; resume with Last-Event-ID: {dropped_at}"]

    rest = follow(s.events_url() + f"?until={last}", headers={"Last-Event-ID": str(dropped_at)})
    assert data_of(got) + data_of(rest) == s.log()


def test_two_subscribers_see_identical_streams(served: Callable[..., Served]) -> None:
    s = served([text_turn(*(f"part {i} " for i in range(30)))], delay=0.01)
    turn = s.start_turn("go")
    s.wait_turn(turn)
    url = s.events_url() + f"?until={s.last_seq()}"
    first, second = follow(url), follow(url)
    assert [m.fields for m in first] == [m.fields for m in second]
    assert data_of(first) == s.log()


@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    initial=st.integers(0, 30),
    visits=st.lists(st.tuples(st.integers(0, 12), st.integers(0, 8)), max_size=6),
)
def test_any_disconnect_points_give_the_log_exactly_once(
    server: Served, initial: int, visits: list[tuple[int, int]]
) -> None:
    """Read ``k`` events, disconnect, let ``m`` events be appended while
    away, reconnect with ``Last-Event-ID``; repeat; finally read up to the
    end. What arrived, concatenated, is the log."""
    s = server
    thread_id = s.portal.call(
        s.h.service.create_thread, ThreadSettings(workspace=str(s.h.workspace))
    )
    s.warn(initial, thread_id=thread_id)
    received: list[bytes] = []
    last = 0
    url = s.events_url(thread_id)
    for take, appended in visits:
        target = min(last + take, len(s.log(thread_id)))
        if target > last:
            got = follow(
                url,
                headers={"Last-Event-ID": str(last)} if last else None,
                stop=lambda m, target=target: m.seq is not None and m.seq >= target,
            )
            assert got[-1].seq == target
            received += data_of(got)
            last = max([last, *(m.seq for m in got if m.seq is not None)])
        s.warn(appended, thread_id=thread_id)
    end = len(s.log(thread_id))
    if last < end:
        received += data_of(follow(url + f"?until={end}", headers={"Last-Event-ID": str(last)}))
    else:
        with client() as c:
            assert (
                c.get(url + f"?until={end}", headers={"Last-Event-ID": str(last)}).status_code
                == 204
            )
    assert received == s.log(thread_id)
