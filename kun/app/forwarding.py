"""Calls for a thread whose writer is another worker sharing the store.

On a shared store (PostgreSQL, many ``kun serve`` workers) only the worker
that writes a thread can start its turn, steer, interrupt or answer it:
its turn runs there. :class:`~kun.app.local.LocalKun` hands such a call to
a :class:`Forwarder` (``kun serve`` gives it one over the store's control
channel, :mod:`kun.server.cluster`), which has the writer make the same
call of its own adapter and brings back its answer, or its refusal with
the status and code the writer's API would have answered.

Each call is one :class:`Call` (the adapter method's name and its
arguments as JSON) and one :class:`Reply`. A forwarder answers ``None``
when no writer answered (there was none, or it let go of the thread
meanwhile): the caller then tries the thread here.
"""

from __future__ import annotations

from typing import Any, Protocol, TypeVar

import msgspec

from kun.app.refusals import refused

__all__ = ["BROADCAST", "Call", "Forwarder", "Refusal", "Reply", "answer_of", "reply_to"]

BROADCAST = "*"
"""The thread id of a call for whichever worker knows the id it names (an
approval or a question: their ids do not say the thread)."""

_T = TypeVar("_T")


class Call(msgspec.Struct, frozen=True, kw_only=True):
    """``method`` of :class:`~kun.app.local.LocalKun`, with ``args``."""

    method: str
    args: dict[str, msgspec.Raw] = {}


class Refusal(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    status: int
    code: str
    message: str
    field: str | None = None


class Reply(msgspec.Struct, frozen=True, kw_only=True):
    """The answer's JSON, or the refusal."""

    answer: msgspec.Raw = msgspec.field(default_factory=lambda: msgspec.Raw(b"null"))
    error: Refusal | None = None


class Forwarder(Protocol):
    async def ask(self, thread_id: str, call: Call) -> Reply | None:
        """The writer's reply to ``call`` on ``thread_id`` (or on
        :data:`BROADCAST`), or ``None``: nobody answered."""
        ...

    def serves(self, workspace: str | None) -> bool:
        """Whether this worker reaches ``workspace`` (its roots hold it)."""
        ...

    async def wait(self, thread_id: str, workspace: str | None) -> None:
        """Leave the thread's queued turns to a worker that reaches
        ``workspace``."""
        ...

    async def unserved(self, workspace: str | None) -> str | None:
        """Why no live worker can run a turn in ``workspace``, or ``None``."""
        ...


def call(method: str, **args: Any) -> Call:
    return Call(
        method=method, args={k: msgspec.Raw(msgspec.json.encode(v)) for k, v in args.items()}
    )


def answer_of(reply: Reply, kind: type[_T]) -> _T:
    """The answer carried by ``reply``, or its refusal raised as the
    :class:`~kun.app.refusals.Refused` its status names."""
    if reply.error is not None:
        error = reply.error
        raise refused(error.status, error.code, error.message, error.field)
    return msgspec.json.decode(reply.answer, type=kind)


def reply_to(answer: object) -> Reply:
    return Reply(answer=msgspec.Raw(msgspec.json.encode(answer)))
