"""A model that answers from a script: for tests, the demo and benchmarks.

:class:`ScriptedModelClient` implements :class:`~kun.model.port.ModelClient`
without a network. Each ``stream`` call takes the next response of the
script, in order. A response is either a sequence of chunks, replayed as
is, or a function of the request returning chunks (a sync iterable or an
async iterator), for fakes with behaviour: echo the last user message,
call a tool only when it is offered, fail on the third call. A single
function given as the whole script answers every call.

Contract, as for every model client: the stream ends with exactly one
``completed`` or ``error`` chunk. A response without one gets a
``completed`` chunk appended (stop reason ``tool_calls`` when it settled a
call, else ``stop``); nothing after the first terminal chunk is sent. A
call past the end of the script is an ``error`` chunk with code
``script_exhausted``, not an exception, so the loop records it like any
provider failure. Cancelling the consuming scope stops the stream at the
next chunk (every chunk is a checkpoint).

Clones from :meth:`~ScriptedModelClient.with_thinking` and
:meth:`~ScriptedModelClient.with_max_completion_tokens` share the script
position and the call record with their original, as HTTP clones share
one transport: a test can hand the loop a clone and still assert on the
original.
"""

from __future__ import annotations

from collections.abc import (
    AsyncIterable,
    AsyncIterator,
    Callable,
    Iterable,
    Iterator,
    Sequence,
)
from typing import Self, TypeAlias

import anyio
import anyio.lowlevel
import msgspec

from kun.contracts.model import (
    CompletedChunk,
    ErrorChunk,
    ModelRequest,
    ModelStreamChunk,
    TextDeltaChunk,
    ToolCallCompleteChunk,
    ToolCallDeltaChunk,
)

__all__ = [
    "Responder",
    "ScriptedCall",
    "ScriptedModelClient",
    "text_reply",
    "tool_reply",
]

Responder: TypeAlias = Callable[
    [ModelRequest], Iterable[ModelStreamChunk] | AsyncIterable[ModelStreamChunk]
]
"""A response computed from the request."""

Response: TypeAlias = Sequence[ModelStreamChunk] | Responder

_TERMINAL = (CompletedChunk, ErrorChunk)


class ScriptedCall(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One ``stream`` call as the client received it, with the settings of
    the clone that received it."""

    request: ModelRequest
    thinking: str | None = None
    max_completion_tokens: int | None = None


class _Script:
    """The position and call record every clone shares."""

    __slots__ = ("calls", "length", "responses")

    def __init__(self, responses: Iterable[Response] | Responder) -> None:
        self.responses: Iterator[Response]
        self.length: int | None
        if callable(responses):
            self.responses = _forever(responses)
            self.length = None
        else:
            fixed = [r if callable(r) else _checked(tuple(r)) for r in responses]
            self.responses = iter(fixed)
            self.length = len(fixed)
        self.calls: list[ScriptedCall] = []


class ScriptedModelClient:
    """Replays a script of responses (see the module docstring).

    ``delay`` (seconds) is slept before every chunk, to make a stream slow
    enough to abort or time out.
    """

    __slots__ = ("_delay", "_max_tokens", "_model", "_provider", "_script", "_thinking")

    def __init__(
        self,
        script: Iterable[Response] | Responder = (),
        *,
        provider: str = "scripted",
        model: str = "scripted",
        delay: float = 0.0,
    ) -> None:
        self._script = _Script(script)
        self._provider = provider
        self._model = model
        self._delay = delay
        self._thinking: str | None = None
        self._max_tokens: int | None = None

    @property
    def provider(self) -> str:
        return self._provider

    @property
    def model(self) -> str:
        return self._model

    @property
    def thinking(self) -> str | None:
        """The reasoning effort this clone was given, if any."""
        return self._thinking

    @property
    def max_completion_tokens(self) -> int | None:
        """The output budget this clone was given, if any."""
        return self._max_tokens

    @property
    def calls(self) -> list[ScriptedCall]:
        """Every call so far, by this client and its clones, in order."""
        return list(self._script.calls)

    @property
    def requests(self) -> list[ModelRequest]:
        """The requests of :attr:`calls`."""
        return [call.request for call in self._script.calls]

    def with_thinking(self, effort: str) -> Self:
        clone = self._clone()
        clone._thinking = effort
        return clone

    def with_max_completion_tokens(self, n: int) -> Self:
        clone = self._clone()
        clone._max_tokens = n
        return clone

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelStreamChunk]:
        """Take the next response of the script now (so calls are numbered in
        the order ``stream`` was called) and replay it when iterated."""
        script = self._script
        script.calls.append(
            ScriptedCall(
                request=request, thinking=self._thinking, max_completion_tokens=self._max_tokens
            )
        )
        response = next(script.responses, None)
        if response is None:
            return self._replay(_exhausted(len(script.calls), script.length))
        if callable(response):
            return self._replay(_terminated(response(request)))
        return self._replay(_terminated(response))

    async def _replay(
        self, chunks: AsyncIterator[ModelStreamChunk]
    ) -> AsyncIterator[ModelStreamChunk]:
        delay = self._delay
        async for chunk in chunks:
            if delay > 0:
                await anyio.sleep(delay)
            else:
                await anyio.lowlevel.checkpoint()
            yield chunk

    def _clone(self) -> Self:
        clone = object.__new__(type(self))
        for name in self.__slots__:
            setattr(clone, name, getattr(self, name))
        return clone


def text_reply(text: str, *, stop_reason: str = "stop") -> list[ModelStreamChunk]:
    """A response that says ``text`` and completes."""
    return [TextDeltaChunk(text=text), CompletedChunk(stop_reason=stop_reason)]


def tool_reply(
    name: str, arguments: object = None, *, call_id: str = "call_0", text: str = ""
) -> list[ModelStreamChunk]:
    """A response that (optionally says ``text`` and) calls one tool with
    ``arguments`` (any JSON-encodable object; ``None`` means ``{}``), as a
    provider would stream it."""
    encoded = msgspec.json.encode(arguments if arguments is not None else {})
    chunks: list[ModelStreamChunk] = [TextDeltaChunk(text=text)] if text else []
    chunks += [
        ToolCallDeltaChunk(call_id=call_id, name=name, arguments=encoded.decode()),
        ToolCallCompleteChunk(
            call_id=call_id,
            name=name,
            arguments=msgspec.Raw(encoded),
            arguments_text=encoded.decode(),
        ),
        CompletedChunk(stop_reason="tool_calls"),
    ]
    return chunks


def _checked(chunks: tuple[ModelStreamChunk, ...]) -> tuple[ModelStreamChunk, ...]:
    """A fixed response may not go on after its terminal chunk: that is a
    mistake in the script, caught when the script is built."""
    for position, chunk in enumerate(chunks[:-1]):
        if isinstance(chunk, _TERMINAL):
            raise ValueError(
                f"scripted response has {len(chunks) - position - 1} chunk(s) after its "
                f"terminal {chunk.__class__.__name__} at position {position}"
            )
    return chunks


async def _terminated(
    chunks: Iterable[ModelStreamChunk] | AsyncIterable[ModelStreamChunk],
) -> AsyncIterator[ModelStreamChunk]:
    """The chunks up to the first terminal one, with a ``completed`` chunk
    appended when there is none."""
    settled = False
    if isinstance(chunks, AsyncIterable):
        async for chunk in chunks:
            yield chunk
            if isinstance(chunk, _TERMINAL):
                return
            settled = settled or isinstance(chunk, ToolCallCompleteChunk)
    else:
        for chunk in chunks:
            yield chunk
            if isinstance(chunk, _TERMINAL):
                return
            settled = settled or isinstance(chunk, ToolCallCompleteChunk)
    yield CompletedChunk(stop_reason="tool_calls" if settled else "stop")


async def _exhausted(call: int, length: int | None) -> AsyncIterator[ModelStreamChunk]:
    yield ErrorChunk(
        message=f"ScriptedModelClient: no scripted response for call {call} "
        f"(the script has {length})",
        code="script_exhausted",
    )


def _forever(responder: Responder) -> Iterator[Response]:
    while True:
        yield responder
