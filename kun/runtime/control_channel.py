"""The local control channel: how ``kun steer`` and ``kun interrupt`` reach
a turn that a ``kun run`` or ``kun chat`` runs, from another terminal.

Only the process that runs a turn can steer or stop it, so while it shows
a turn it listens on a Unix domain socket beside the thread's log,
``<home>/threads/<id>/control.sock`` (mode 0600; a home whose path is too
long for a socket address puts it under ``<tmp>/kun-<uid>/``, named by a
hash of that path). The protocol is one JSON line each way: ``{"op":
"steer", "text"}`` or ``{"op": "interrupt", "discard"}`` (each with an
optional ``turn_id``, else the running turn), answered ``{"turn_id",
"status"}`` or ``{"error": {"status", "code", "message"}}`` with the
status and code the HTTP API gives for the same refusal.

The socket is a door, not a reason to live: the thread's writer (the
holder of its writer lock) opens it around a shown turn (:func:`serve_control`),
closes and removes it when the turn ends, and gives an answer being
written a short grace, never more. A socket file nobody listens on is what
a process that died leaves: a listener replaces it; a socket somebody
answers on is never taken over (the thread's writer lock already keeps a
second writer out). Where ``AF_UNIX`` is missing
(Windows) nothing listens and :func:`ask` finds nobody.
"""

from __future__ import annotations

import hashlib
import logging
import os
import socket
import stat
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import msgspec
from anyio.abc import SocketListener, SocketStream, TaskGroup
from anyio.streams.buffered import BufferedByteReceiveStream

from kun.domain.turnref import NoSuchTurn
from kun.errors import UserMistake
from kun.runtime.errors import BlankPrompt, SteeringFull, TurnNotRunning, UnknownTurn
from kun.store.errors import ThreadLocked
from kun.store.lock import lock_thread
from kun.store.paths import lock_path, thread_dir

if TYPE_CHECKING:
    from kun.runtime.service import TurnService

__all__ = [
    "NO_RUNNING_TURN",
    "SOCKET_NAME",
    "SOCKET_WAIT_SECONDS",
    "Answer",
    "Door",
    "Interrupt",
    "Refusal",
    "Steer",
    "Unanswered",
    "ask",
    "available",
    "control_path",
    "serve_control",
]

_log = logging.getLogger(__name__)

SOCKET_NAME = "control.sock"
NO_RUNNING_TURN = "no_running_turn"
"""The refusal code when no turn was named and none runs."""
MAX_REQUEST_BYTES = 1 << 20
READ_SECONDS = 10.0
"""How long a connection may take to send its request line."""
GRACE_SECONDS = 15.0
"""How long an answer being made may outlive the turn (an interrupt waits
for the turn to settle, at most 10 s)."""
ANSWER_SECONDS = 30.0
"""How long :func:`ask` waits for the answer of a process that took the
connection."""
SOCKET_WAIT_SECONDS = 2.0
"""How long a caller waits for the socket of a turn that runs in a live
process (set up beside the shown turn, a moment after its first event)."""
RETRY_SECONDS = 0.02
_MAX_ADDRESS = 100  # sun_path: 108 bytes on Linux, 104 on macOS, with the NUL


class Steer(msgspec.Struct, frozen=True, tag_field="op", tag="steer"):
    text: str
    turn_id: str | None = None


class Interrupt(msgspec.Struct, frozen=True, tag_field="op", tag="interrupt"):
    discard: bool = False
    turn_id: str | None = None


class Refusal(msgspec.Struct, frozen=True):
    status: int
    code: str
    message: str


class Answer(msgspec.Struct, frozen=True, omit_defaults=True):
    """The turn reached and, for an interrupt, its status once settled; or
    why not."""

    turn_id: str | None = None
    status: str | None = None
    error: Refusal | None = None


_REQUEST = msgspec.json.Decoder(Steer | Interrupt)
_ANSWER = msgspec.json.Decoder(Answer)

_REFUSALS: tuple[tuple[type[UserMistake], int, str], ...] = (
    (TurnNotRunning, 409, "turn_not_running"),
    (SteeringFull, 409, "steering_full"),
    (UnknownTurn, 404, "turn_not_found"),
    (NoSuchTurn, 404, "turn_not_found"),
    (BlankPrompt, 422, "blank"),
)


def available() -> bool:
    return sys.platform != "win32" and hasattr(socket, "AF_UNIX")


def control_path(home: Path, thread_id: str) -> Path:
    """Where the thread's control socket is: beside its log, or (a path too
    long for a socket address) under a private folder in the temp dir."""
    path = thread_dir(home, thread_id) / SOCKET_NAME
    if len(os.fsencode(path)) <= _MAX_ADDRESS:
        return path
    digest = hashlib.sha256(os.fsencode(path)).hexdigest()[:32]
    return Path(tempfile.gettempdir()) / f"kun-{os.getuid()}" / f"{digest}.sock"


def _private_folder(path: Path) -> bool:
    """The socket's folder, when it is not the thread's: created 0700, and
    used only if it is this user's own and nobody else's to write in."""
    folder = path.parent
    if folder.name != f"kun-{os.getuid()}":
        return True
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        info = folder.lstat()
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o077


# -- the process that runs the turn ---------------------------------------------


@asynccontextmanager
async def serve_control(service: TurnService, thread_id: str) -> AsyncIterator[Door]:
    """Listen for steering and interrupts of ``thread_id`` until the block
    ends. The socket is set up beside the block, which never waits for it
    (the turn is shown from its first event); without a home on disk,
    ``AF_UNIX``, the thread's writer lock or a free socket path nothing
    listens and the block just runs. The :class:`Door` yielded says when
    the setup is over and whether it listens."""
    door = Door(service, thread_id)
    async with anyio.create_task_group() as answering:
        async with anyio.create_task_group() as accepting:
            accepting.start_soon(door.serve, answering)
            try:
                yield door
            finally:
                accepting.cancel_scope.cancel()
                door.close()
        answering.cancel_scope.deadline = anyio.current_time() + GRACE_SECONDS


def _holds_lock(home: Path, thread_id: str) -> bool:
    """Whether no other process is the thread's writer, the only one that
    runs its turns: the writer lock (:mod:`kun.store.lock`) is held by us,
    or by nobody (a writer holds it only while it writes, so a door opened
    just before a turn starts, or just after it ended, finds it free)."""
    try:
        fd = lock_thread(thread_id, lock_path(home, thread_id))
    except ThreadLocked as held:
        return held.holder_pid == os.getpid()
    except OSError:
        return False
    os.close(fd)
    return True


async def _listen(path: Path) -> SocketListener | None:
    if not _private_folder(path) or await _answers(path):
        return None
    try:
        return await anyio.create_unix_listener(path, mode=0o600)
    except OSError as exc:
        _log.warning("no control channel at %s: %s", path, exc)
        return None


async def _answers(path: Path) -> bool:
    """Whether a live process listens at ``path`` (never steal its socket)."""
    try:
        with anyio.fail_after(2):
            stream = await anyio.connect_unix(path)
    except (OSError, TimeoutError):
        return False
    await stream.aclose()
    return True


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        info = path.lstat()
    except OSError:
        return None
    return info.st_dev, info.st_ino


class Door:
    """One thread's listener and its connections. Closing it drops those
    still sending their request (a silent caller never holds the process
    up); an answer already being made is finished, within the grace."""

    def __init__(self, service: TurnService, thread_id: str) -> None:
        self.service = service
        self.thread_id = thread_id
        self.ready = anyio.Event()
        """Set once the socket listens, or it is known that none will."""
        self.listening = False
        self._reading: set[anyio.CancelScope] = set()
        self._closed = False

    def close(self) -> None:
        self._closed = True
        for scope in self._reading:
            scope.cancel()

    async def serve(self, answering: TaskGroup) -> None:
        try:
            with anyio.CancelScope(shield=True):  # a bound socket is never left behind
                path, listener = await self._listen()
            if path is None or listener is None:
                return
        finally:
            self.ready.set()
        mine = _identity(path)
        try:
            await listener.serve(self.handle, answering)
        finally:
            self.listening = False
            with anyio.CancelScope(shield=True):
                await listener.aclose()
            if mine is not None and _identity(path) == mine:
                path.unlink(missing_ok=True)

    async def _listen(self) -> tuple[Path | None, SocketListener | None]:
        home = getattr(self.service.recorder.store, "home", None)
        if not (isinstance(home, Path) and available() and _holds_lock(home, self.thread_id)):
            return None, None
        path = control_path(home, self.thread_id)
        listener = await _listen(path)
        self.listening = listener is not None
        return path, listener

    async def handle(self, stream: SocketStream) -> None:
        try:
            async with stream:
                line = await self._request_line(stream)
                if line is None:
                    return
                try:
                    request = _REQUEST.decode(line)
                except msgspec.DecodeError as exc:
                    answer = Answer(error=Refusal(400, "invalid_request", str(exc)))
                else:
                    answer = await _answer(self.service, self.thread_id, request)
                await stream.send(msgspec.json.encode(answer) + b"\n")
        except Exception as exc:  # a caller that went away, or sent no line
            _log.debug("control connection on thread %s: %r", self.thread_id, exc)

    async def _request_line(self, stream: SocketStream) -> bytes | None:
        with anyio.CancelScope() as reading:
            if self._closed:
                return None
            self._reading.add(reading)
            try:
                with anyio.fail_after(READ_SECONDS):
                    return await BufferedByteReceiveStream(stream).receive_until(
                        b"\n", MAX_REQUEST_BYTES
                    )
            finally:
                self._reading.discard(reading)
        return None


async def _answer(service: TurnService, thread_id: str, request: Steer | Interrupt) -> Answer:
    """Do what the HTTP API does for the same request, with its refusals."""
    turn_id = request.turn_id or service.running_turn(thread_id)
    if turn_id is None:
        message = f"thread {thread_id} has no running turn"
        return Answer(error=Refusal(409, NO_RUNNING_TURN, message))
    try:
        if not any(t.turn_id == turn_id for t in service.state(thread_id).turns):
            raise UnknownTurn(thread_id, turn_id)
        if isinstance(request, Steer):
            await service.steer_turn(thread_id, turn_id, request.text)
            return Answer(turn_id=turn_id)
        await service.interrupt_turn(thread_id, turn_id, discard=request.discard)
        turn = next(t for t in service.state(thread_id).turns if t.turn_id == turn_id)
        return Answer(turn_id=turn_id, status=turn.status)
    except UserMistake as exc:
        status, code = next(
            ((s, c) for kind, s, c in _REFUSALS if isinstance(exc, kind)), (400, "invalid")
        )
        return Answer(error=Refusal(status, code, str(exc)))


# -- another process ----------------------------------------------------------------


async def ask(
    home: Path, thread_id: str, request: Steer | Interrupt, *, wait: float = 0.0
) -> Answer | None:
    """Send ``request`` to the process that listens for ``thread_id``; its
    answer, or ``None`` when nobody listens (no socket, or a dead process's:
    the caller then says why the turn cannot be reached). With ``wait``,
    nobody listening is retried for that many seconds (a turn that just
    began, whose socket is not bound yet)."""
    if not available():
        return None
    stream = await _connect(control_path(home, thread_id), wait)
    if stream is None:
        return None
    try:
        async with stream:
            with anyio.fail_after(ANSWER_SECONDS):
                await stream.send(msgspec.json.encode(request) + b"\n")
                line = await BufferedByteReceiveStream(stream).receive_until(
                    b"\n", MAX_REQUEST_BYTES
                )
        return _ANSWER.decode(line)
    except (OSError, TimeoutError, anyio.EndOfStream, anyio.IncompleteRead, msgspec.DecodeError):
        raise Unanswered(thread_id) from None


async def _connect(path: Path, wait: float) -> SocketStream | None:
    deadline = anyio.current_time() + wait
    while True:
        stream = await _connect_once(path)
        if stream is not None or anyio.current_time() >= deadline:
            return stream
        await anyio.sleep(RETRY_SECONDS)


async def _connect_once(path: Path) -> SocketStream | None:
    try:
        return await anyio.connect_unix(path)
    except OSError:
        return None


class Unanswered(UserMistake):
    """The process listening for the thread took the request and gave no
    answer (it stopped, or hangs)."""

    def __init__(self, thread_id: str) -> None:
        super().__init__(
            f"the kun running thread {thread_id} took the request but did not answer; "
            f"kun replay {thread_id} shows whether it arrived"
        )
        self.suggests = ("replay", thread_id)
