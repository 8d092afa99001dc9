"""A model client that reports its calls to the turn's trace.

It stands in for the turn's model (:meth:`kun.observe.observer.Observer.bind_turn`)
and passes every chunk through unchanged, so the loop and the event log see
exactly what they would without it. An observation that fails is logged and
dropped (:func:`kun.observe.trace.guarded`): it never fails the turn. A
stream the loop stops reading (an interrupt) is recorded as ``cancelled``
when it is closed.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Self

from kun.contracts.model import ModelRequest, ModelStreamChunk
from kun.model.port import ModelClient
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
        try:
            async for chunk in self.inner.stream(request):
                saw(chunk)
                yield chunk
        finally:
            guarded(self.trace.model_ended, call)

    def with_thinking(self, effort: str) -> Self:
        return type(self)(self.inner.with_thinking(effort), self.trace)

    def with_max_completion_tokens(self, n: int) -> Self:
        return type(self)(self.inner.with_max_completion_tokens(n), self.trace)
