"""A fake provider for the HTTP client tests: ``httpx.MockTransport`` whose
behaviour is a script of answers, and byte streams that pace themselves,
hang, or fail, and record whether the client closed them."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import aclosing
from typing import Any

import anyio
import anyio.lowlevel
import httpx
import msgspec

from kun.contracts.items import AssistantText, UserMessage
from kun.contracts.model import ModelRequest, ModelStreamChunk, ToolSpec
from kun.model.client import HttpModelClient
from kun.model.endpoints import EndpointFormat
from kun.model.retry import RetryPolicy

SSE = {"content-type": "text/event-stream"}
JSON = {"content-type": "application/json"}

REQUEST = ModelRequest(
    system_prompt="You are terse.",
    history=(
        UserMessage(id="u1", text="Hi"),
        AssistantText(id="a1", text="Hello."),
        UserMessage(id="u2", text="Say hello again."),
    ),
    tools=(ToolSpec(name="ls", description="List a directory."),),
)


class Stream(httpx.AsyncByteStream):
    """A response body: ``pieces`` with ``gap`` seconds before each, then,
    if ``tail`` is set, ``tail`` again every ``tail_gap`` seconds forever
    (keep-alives), or, with ``hang``, silence forever (``hanging`` is set
    then); ``fail`` is raised after the pieces. ``closed`` records the client
    closing it."""

    def __init__(
        self,
        pieces: Sequence[bytes],
        *,
        gap: float = 0.0,
        hang: bool = False,
        tail: bytes = b"",
        tail_gap: float = 0.01,
        fail: Exception | None = None,
    ) -> None:
        self.pieces = list(pieces)
        self.gap = gap
        self.hang = hang
        self.tail = tail
        self.tail_gap = tail_gap
        self.fail = fail
        self.closed = False
        self.sent = 0
        self.hanging = anyio.Event()

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for piece in self.pieces:
            if self.gap:
                await anyio.sleep(self.gap)
            self.sent += 1
            yield piece
        if self.fail is not None:
            raise self.fail
        while self.tail:
            await anyio.sleep(self.tail_gap)
            yield self.tail
        if self.hang:
            self.hanging.set()
            await anyio.sleep_forever()

    async def aclose(self) -> None:
        self.closed = True


def split(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


def sse(data: bytes | Stream, status: int = 200, headers: dict[str, str] | None = None) -> Answer:
    stream = data if isinstance(data, Stream) else Stream([data])
    return Answer(lambda: httpx.Response(status, headers={**SSE, **(headers or {})}, stream=stream))


def json_answer(status: int, body: Any, headers: dict[str, str] | None = None) -> Answer:
    content = body if isinstance(body, bytes) else msgspec.json.encode(body)
    return Answer(
        lambda: httpx.Response(status, headers={**JSON, **(headers or {})}, content=content)
    )


def failing(exc: Exception) -> Answer:
    def build() -> httpx.Response:
        raise exc

    return Answer(build)


class Answer:
    """One scripted answer; ``delay`` seconds before the headers (``None``:
    never)."""

    def __init__(self, build: Callable[[], httpx.Response], delay: float | None = 0.0) -> None:
        self.build = build
        self.delay: float | None = delay


class Script:
    """Answers requests in order, one ``Answer`` each (the last repeats), and
    records what was asked; ``routes`` answer by path instead."""

    def __init__(self, *answers: Answer, routes: dict[str, Answer] | None = None) -> None:
        self.answers = list(answers)
        self.routes = routes or {}
        self.requests: list[httpx.Request] = []

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return [msgspec.json.decode(r.content) for r in self.requests if r.method == "POST"]

    @property
    def posts(self) -> int:
        return sum(1 for r in self.requests if r.method == "POST")

    async def handler(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        answer = self.routes.get(request.url.path)
        if answer is None:
            answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if answer.delay is None:
            await anyio.sleep_forever()
        elif answer.delay:
            await anyio.sleep(answer.delay)
        return answer.build()

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self.handler)


class Sleeps:
    """An injectable sleep that records the waits and does not wait."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)
        await anyio.lowlevel.checkpoint()


def client(
    script: Script,
    wire_format: EndpointFormat = "chat_completions",
    *,
    base_url: str = "https://api.example.test/v1",
    sleep: Callable[[float], Awaitable[None]] | None = None,
    retry: RetryPolicy | None = None,
    model: str = "model-x",
    **kwargs: Any,
) -> HttpModelClient:
    return HttpModelClient(
        "example",
        model,
        base_url,
        wire_format,
        api_key=kwargs.pop("api_key", "sk-test-key-0001"),
        http=httpx.AsyncClient(transport=script.transport()),
        retry=retry or RetryPolicy(jitter=0.0),
        sleep=sleep or Sleeps(),
        rng=random.Random(0),
        **kwargs,
    )


async def collect(
    model: HttpModelClient, request: ModelRequest = REQUEST
) -> list[ModelStreamChunk]:
    async with aclosing(model.stream(request)) as chunks:
        return [chunk async for chunk in chunks]
