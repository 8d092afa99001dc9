"""W3C trace context in and out (https://www.w3.org/TR/trace-context/).

In: a route that starts a turn (:mod:`kun.server.turns`,
:mod:`kun.server.compact`) hands the request's ``traceparent`` and
``tracestate`` headers to :func:`caller_trace`; the first run bound while it
is in effect takes them as the parent of its turn span
(:meth:`kun.observe.observer.Observer.bind_turn`), so a traced caller sees
kun's turn inside its own trace. The headers are kept in a one-shot box: the
turn's task, which copies the request's context, and the turns it resumes
later do not take them again.

Out: the model call's span is sent to the provider as ``traceparent`` by
:data:`kun.model.transport.TRACE_HEADERS`, set around a traced call only.

No OpenTelemetry here (only :mod:`kun.observe.otel` reads the headers):
with tracing off, a request costs one header lookup and nothing is sent.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextvars import ContextVar, Token

__all__ = ["caller_trace", "take_caller_trace"]

_CALLER: ContextVar[dict[str, str] | None] = ContextVar("kun_caller_trace", default=None)


class caller_trace:
    """The caller's trace context (from ``headers``, an HTTP request's) for
    the turn started inside the block; nothing when it sends none. A class,
    not a generator: with no header it is one lookup and two calls."""

    __slots__ = ("_token",)

    def __init__(self, headers: Mapping[str, str]) -> None:
        self._token: Token[dict[str, str] | None] | None = None
        parent = headers.get("traceparent")
        if parent is not None:
            box = {"traceparent": parent}
            state = headers.get("tracestate")
            if state is not None:
                box["tracestate"] = state
            self._token = _CALLER.set(box)

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc_info: object) -> None:
        if self._token is not None:
            _CALLER.reset(self._token)


def take_caller_trace() -> dict[str, str] | None:
    """The caller's trace headers, once: the box is emptied."""
    box = _CALLER.get()
    if not box:
        return None
    taken = dict(box)
    box.clear()
    return taken
