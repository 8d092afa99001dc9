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

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["caller_trace", "take_caller_trace"]

_CALLER: ContextVar[dict[str, str] | None] = ContextVar("kun_caller_trace", default=None)


@contextmanager
def caller_trace(headers: Mapping[str, str]) -> Iterator[None]:
    """The caller's trace context (from ``headers``, an HTTP request's) for
    the turn started inside the block; nothing when it sends none."""
    parent = headers.get("traceparent")
    if parent is None:
        yield
        return
    box = {"traceparent": parent}
    state = headers.get("tracestate")
    if state is not None:
        box["tracestate"] = state
    token = _CALLER.set(box)
    try:
        yield
    finally:
        _CALLER.reset(token)


def take_caller_trace() -> dict[str, str] | None:
    """The caller's trace headers, once: the box is emptied."""
    box = _CALLER.get()
    if not box:
        return None
    taken = dict(box)
    box.clear()
    return taken
