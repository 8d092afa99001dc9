"""A Python client of kun's HTTP API (``kun serve``): :class:`AsyncKunClient`
(the HTTP adapter of :class:`kun.app.interface.Kun`) and :class:`KunClient`
(the same methods, blocking), typed end to end: requests are the Structs of
:mod:`kun.app.requests`, answers those of :mod:`kun.app.answers` and the
projections :class:`~kun.domain.state.ThreadState` and
:class:`~kun.domain.state.TurnState`, events
:class:`kun.contracts.events.Event`.

A refusal is a :class:`~kun.app.refusals.Refused` of the class its status
names (:class:`NotFound`, :class:`Conflict`, :class:`BadRequest`,
:class:`Unauthorized`, :class:`ServerFailed`); a server out of reach is
:class:`Unreachable`; an event stream that kept dropping is
:class:`StreamLost`. Each is a :class:`~kun.errors.UserMistake` of one line.

The names load on first use: ``import kun.client`` costs nothing until a
client is made (httpx and the Structs come with it).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kun.app.refusals import (
        BadRequest,
        Conflict,
        NotFound,
        Refused,
        ServerFailed,
        Unauthorized,
    )
    from kun.client.async_client import AsyncKunClient
    from kun.client.errors import ApiError, StreamLost, Unreachable, explained, refusal
    from kun.client.feed import AsyncFeed, Feed, Retry
    from kun.client.sync_client import KunClient

__all__ = [
    "ApiError",
    "AsyncFeed",
    "AsyncKunClient",
    "BadRequest",
    "Conflict",
    "Feed",
    "KunClient",
    "NotFound",
    "Refused",
    "Retry",
    "ServerFailed",
    "StreamLost",
    "Unauthorized",
    "Unreachable",
    "explained",
    "refusal",
]

_WHERE = {
    "AsyncKunClient": "kun.client.async_client",
    "KunClient": "kun.client.sync_client",
    "AsyncFeed": "kun.client.feed",
    "Feed": "kun.client.feed",
    "Retry": "kun.client.feed",
    "ApiError": "kun.client.errors",
    "StreamLost": "kun.client.errors",
    "Unreachable": "kun.client.errors",
    "explained": "kun.client.errors",
    "refusal": "kun.client.errors",
    "BadRequest": "kun.app.refusals",
    "Conflict": "kun.app.refusals",
    "NotFound": "kun.app.refusals",
    "Refused": "kun.app.refusals",
    "ServerFailed": "kun.app.refusals",
    "Unauthorized": "kun.app.refusals",
}


def __getattr__(name: str) -> Any:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'kun.client' has no attribute {name!r}")
    return getattr(importlib.import_module(where), name)
