"""The debug recorder: the last rounds with a model, in memory only.

A *round* is one ``stream`` call of an HTTP model client: the raw body of
each request sent (a resend without ``stream_options`` differs from the
first), the raw response as read (every piece, from every attempt, error
bodies included) and the chunks the caller received. :class:`DebugRecorder`
keeps the last ``capacity`` (25) rounds, oldest dropped first, and hands
them out as frozen :class:`DebugRound` snapshots (the API and the CLI will
read them).

Privacy: rounds live in memory only, never on disk or in a log: prompts
are private. Request headers (where the API key travels) are not recorded
at all, and the URL is redacted. Everything kept is scrubbed with the
client's :class:`~kun.model.redact.Redactor` as it is recorded, not when it
is read, so no reader (an API, a CLI, a debugger) can see a key a provider
echoed in a 401 body or a model repeated: request bodies, response bytes
(the last few bytes of a running call, where a key could still be cut in
two, are held back until more arrive or the call ends) and chunks.

Cost: a client holds an optional observer (``observer=`` of
:class:`~kun.model.client.HttpModelClient`). Without one, nothing happens;
with a recorder that is off, :meth:`DebugRecorder.start` reads one flag per
call and returns ``None``, so nothing is copied or allocated per piece.
Switching the recorder on or off takes effect at the next call.

Concurrency: each call records into its own round; the recorder's ring and
each round's buffers are guarded by locks, so concurrent calls (tasks or
threads) and readers never see a half-written round. A round is in the ring
from its start, so a call that hangs can be inspected while it hangs
(``done`` is false). A round that outgrows ``max_round_bytes`` keeps its
first bytes and is marked ``truncated``.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import deque
from typing import Protocol

import msgspec

from kun.contracts.model import ErrorChunk, ModelStreamChunk
from kun.model.reading import CallStats
from kun.model.redact import Redactor, redact_url

__all__ = ["DEFAULT_CAPACITY", "CallObserver", "CallTap", "DebugRecorder", "DebugRound"]

DEFAULT_CAPACITY = 25
DEFAULT_MAX_ROUND_BYTES = 16 * 1024 * 1024


class CallTap(Protocol):
    """What a client reports of one call, in order: ``request`` before each
    send, ``frame`` for each piece of a response body read, ``chunk`` for
    each chunk yielded, ``finish`` once, when the call ends however it ends."""

    def request(self, body: bytes) -> None: ...

    def frame(self, piece: bytes) -> None: ...

    def chunk(self, chunk: ModelStreamChunk) -> None: ...

    def finish(self, stats: CallStats) -> None: ...


class CallObserver(Protocol):
    """Watches a client's calls. ``start`` is called once per call and
    returns where to report it, or ``None`` to be told nothing."""

    def start(
        self, provider: str, model: str, url: str, redactor: Redactor | None = None
    ) -> CallTap | None: ...


class DebugRound(msgspec.Struct, frozen=True, kw_only=True):
    """One call, as recorded. ``seq`` counts rounds from 1 since the recorder
    was made; ``started_at`` is epoch seconds; ``stats`` is ``None`` (and
    ``done`` false) while the call runs."""

    seq: int
    provider: str
    model: str
    url: str
    started_at: float
    requests: tuple[bytes, ...]
    frames: tuple[bytes, ...]
    chunks: tuple[ModelStreamChunk, ...]
    done: bool
    truncated: bool
    stats: CallStats | None = None


class _Round:
    """One call's buffers, written by the call, copied by readers."""

    __slots__ = (
        "_budget",
        "_chunks",
        "_frames",
        "_lock",
        "_pending",
        "_redactor",
        "_requests",
        "_stats",
        "_truncated",
        "model",
        "provider",
        "seq",
        "started_at",
        "url",
    )

    def __init__(
        self, seq: int, provider: str, model: str, url: str, budget: int, redactor: Redactor
    ) -> None:
        self.seq = seq
        self.provider = provider
        self.model = model
        self.url = redact_url(url)
        self.started_at = time.time()
        self._lock = threading.Lock()
        self._budget = budget
        self._redactor = redactor
        self._pending = b""
        self._truncated = False
        self._requests: list[bytes] = []
        self._frames: list[bytes] = []
        self._chunks: list[ModelStreamChunk] = []
        self._stats: CallStats | None = None

    def request(self, body: bytes) -> None:
        body = _scrub_bytes(self._redactor, body)
        with self._lock:
            if not self._requests or self._requests[-1] != body:
                self._requests.append(body)

    def frame(self, piece: bytes) -> None:
        with self._lock:
            if len(piece) > self._budget:
                piece = piece[: self._budget]
                self._truncated = True
            if piece:
                self._budget -= len(piece)
                self._keep(piece)

    def _keep(self, piece: bytes, *, last: bool = False) -> None:
        if not self._redactor:
            self._frames.append(piece)
            return
        text = (self._pending + piece).decode("utf-8", "surrogateescape")
        head, tail = (self._redactor.scrub(text), "") if last else self._redactor.scrub_stream(text)
        self._pending = tail.encode("utf-8", "surrogateescape")
        if head:
            self._frames.append(head.encode("utf-8", "surrogateescape"))

    def chunk(self, chunk: ModelStreamChunk) -> None:
        chunk = _scrub_chunk(self._redactor, chunk)
        with self._lock:
            self._chunks.append(chunk)

    def finish(self, stats: CallStats) -> None:
        with self._lock:
            if self._pending:
                self._keep(b"", last=True)
            self._stats = stats

    def snapshot(self) -> DebugRound:
        with self._lock:
            return DebugRound(
                seq=self.seq,
                provider=self.provider,
                model=self.model,
                url=self.url,
                started_at=self.started_at,
                requests=tuple(self._requests),
                frames=tuple(self._frames),
                chunks=tuple(self._chunks),
                done=self._stats is not None,
                truncated=self._truncated,
                stats=self._stats,
            )


class DebugRecorder:
    """Keeps the last ``capacity`` rounds in memory; off until enabled.

    Give one recorder to every client (:func:`kun.model.factory.build_router`
    does) and read it with :meth:`rounds`.
    """

    def __init__(
        self,
        *,
        enabled: bool = False,
        capacity: int = DEFAULT_CAPACITY,
        max_round_bytes: int = DEFAULT_MAX_ROUND_BYTES,
    ) -> None:
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self.enabled = enabled
        self._max_round_bytes = max_round_bytes
        self._lock = threading.Lock()
        self._ring: deque[_Round] = deque(maxlen=capacity)
        self._seq = itertools.count(1)

    @property
    def capacity(self) -> int:
        return self._ring.maxlen or DEFAULT_CAPACITY

    def start(
        self, provider: str, model: str, url: str, redactor: Redactor | None = None
    ) -> CallTap | None:
        """A new round for one call, or ``None`` when the recorder is off.
        ``redactor`` (the client's) scrubs all the round keeps."""
        if not self.enabled:
            return None
        scrub = redactor if redactor is not None else Redactor()
        with self._lock:
            round_ = _Round(next(self._seq), provider, model, url, self._max_round_bytes, scrub)
            self._ring.append(round_)
        return round_

    def rounds(self) -> tuple[DebugRound, ...]:
        """Snapshots of the rounds kept, oldest first."""
        with self._lock:
            kept = tuple(self._ring)
        return tuple(round_.snapshot() for round_ in kept)

    def clear(self) -> None:
        """Forget every round kept."""
        with self._lock:
            self._ring.clear()


def _scrub_bytes(redactor: Redactor, raw: bytes) -> bytes:
    """``raw`` scrubbed, every other byte (invalid UTF-8 too) kept as it was."""
    if not redactor:
        return raw
    return redactor.scrub(raw.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape")


def _scrub_chunk(redactor: Redactor, chunk: ModelStreamChunk) -> ModelStreamChunk:
    """``chunk`` with every secret in its text redacted: scrubbed as JSON
    (the redactor knows a secret's JSON-escaped forms) and decoded back.
    A chunk that no longer decodes (a secret holding a quote) keeps only
    what the redactor makes of its JSON, as an error chunk's message."""
    if not redactor:
        return chunk
    encoded = msgspec.json.encode(chunk).decode()
    scrubbed = redactor.scrub(encoded)
    if scrubbed == encoded:
        return chunk
    try:
        return msgspec.json.decode(scrubbed, type=type(chunk))
    except (msgspec.ValidationError, msgspec.DecodeError):
        return ErrorChunk(message=scrubbed, code="redacted")
