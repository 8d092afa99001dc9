"""A model client that reports its calls to the turn's trace.

It stands in for the turn's model (:meth:`kun.observe.observer.Observer.bind_turn`)
and passes every chunk through unchanged, so the loop and the event log see
exactly what they would without it. An observation that fails is logged and
dropped (:func:`kun.observe.trace.guarded`): it never fails the turn. A
stream the loop stops reading (an interrupt) is recorded as ``cancelled``
when it is closed.

With spans on, the call's span goes to the provider as ``traceparent``
(:data:`kun.model.transport.TRACE_HEADERS`, set around each step of the
inner stream, never across a ``yield``: the loop's own context never holds
it).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import aclosing
from typing import Self

from kun.contracts.model import ModelRequest, ModelStreamChunk
from kun.model.port import ModelClient
from kun.model.transport import TRACE_HEADERS
from kun.observe.trace import TurnTrace, guarded

__all__ = ["ObservedModel"]


class ObservedModel:
    def __init__(self, inner: ModelClient, trace: TurnTrace) -> None:
        self.inner = inner
        self.trace = trace

    @property
    def provider(self) -> str:
        return self.inner.provider

    @property
    def model(self) -> str:
        return self.inner.model

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelStreamChunk]:
        call = guarded(self.trace.model_started, self.inner.provider, self.inner.model, request)
        if call is None:
            async for chunk in self.inner.stream(request):
                yield chunk
            return
        saw = call.saw
        headers = guarded(self.trace.headers, call) if call.span is not None else None
        try:
            if headers:
                async with aclosing(_sending(headers, self.inner.stream(request))) as chunks:
                    async for chunk in chunks:
                        saw(chunk)
                        yield chunk
            else:
                async for chunk in self.inner.stream(request):
                    saw(chunk)
                    yield chunk
        finally:
            guarded(self.trace.model_ended, call)

    def with_thinking(self, effort: str) -> Self:
        return type(self)(self.inner.with_thinking(effort), self.trace)

    def with_max_completion_tokens(self, n: int) -> Self:
        return type(self)(self.inner.with_max_completion_tokens(n), self.trace)


async def _sending(
    headers: Mapping[str, str], stream: AsyncIterator[ModelStreamChunk]
) -> AsyncGenerator[ModelStreamChunk, None]:
    """``stream`` with ``headers`` on every request it sends."""
    step = aiter(stream)
    try:
        while True:
            token = TRACE_HEADERS.set(headers)
            try:
                chunk = await anext(step)
            except StopAsyncIteration:
                return
            finally:
                TRACE_HEADERS.reset(token)
            yield chunk
    finally:
        close = getattr(step, "aclose", None)
        if close is not None:
            await close()
