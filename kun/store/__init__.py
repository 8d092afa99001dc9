"""The append-only event log: the ``EventStore`` port and its adapters.

The writers (``JsonlEventStore``, ``MemoryEventStore``,
``PostgresEventStore``) import anyio, and the last psycopg, so they are loaded
on first use: reading a log (``kun replay``) never pays for them.

``JsonlEventStore`` keeps one ``events.jsonl`` per thread under the kun home;
``PostgresEventStore`` keeps threads in a PostgreSQL database
(``pip install 'kun[postgres]'``); ``MemoryEventStore`` is the in-memory fake
with the same contract.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from kun.store.codec import encode_line
from kun.store.errors import (
    CorruptLog,
    InvalidSequence,
    InvalidThreadId,
    LogWriteFailed,
    SchemaTooNew,
    SeqConflict,
    StoreClosed,
    StoreUnavailable,
    ThreadLocked,
    ThreadNotFound,
    UnknownEventKind,
)
from kun.store.paths import log_path, resolve_home, thread_dir, validate_thread_id
from kun.store.port import EventStore, ReadMode, ReadReport, TornTail
from kun.store.reader import read_log

if TYPE_CHECKING:
    from kun.store.jsonl import GROUP_COMMIT_KINDS, JsonlEventStore
    from kun.store.memory import MemoryEventStore
    from kun.store.postgres import PostgresEventStore

_LAZY = {
    "GROUP_COMMIT_KINDS": "kun.store.jsonl",
    "JsonlEventStore": "kun.store.jsonl",
    "MemoryEventStore": "kun.store.memory",
    "PostgresEventStore": "kun.store.postgres",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'kun.store' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


__all__ = [
    "GROUP_COMMIT_KINDS",
    "CorruptLog",
    "EventStore",
    "InvalidSequence",
    "InvalidThreadId",
    "JsonlEventStore",
    "LogWriteFailed",
    "MemoryEventStore",
    "PostgresEventStore",
    "ReadMode",
    "ReadReport",
    "SchemaTooNew",
    "SeqConflict",
    "StoreClosed",
    "StoreUnavailable",
    "ThreadLocked",
    "ThreadNotFound",
    "TornTail",
    "UnknownEventKind",
    "encode_line",
    "log_path",
    "read_log",
    "resolve_home",
    "thread_dir",
    "validate_thread_id",
]
