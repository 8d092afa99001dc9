"""The HTTP adapter of the model port, for every wire format.

:class:`HttpModelClient` encodes a :class:`ModelRequest` (a
:class:`~kun.model.request_codec.RequestCodec`), posts it in pieces with
its exact ``Content-Length`` (:mod:`kun.model.body`: settled history
messages are encoded once per thread, and no step holds the whole body in
one buffer), and turns the answer into the seven chunks:

* an event stream is read with ``aiter_bytes()`` (never ``aiter_lines()``:
  it splits on U+2028, which models put inside JSON strings), fed to the
  :class:`~kun.model.sse.SSEParser` and the format's decoder, and each read's
  chunks are yielded as soon as they decode;
* an ``application/json`` answer (a non-streaming call, or a server that
  ignored ``stream: true``) is read whole and materialized;
* an error status is read (its first 64 KiB) and classified
  (:mod:`kun.model.classify`).

Contract (the port's): the stream ends with exactly one ``completed`` or
``error`` chunk and raises nothing but cancellation. httpx exceptions are
translated once (:mod:`kun.model.transport`); an error reaches the
caller as a chunk whose ``code`` names its class (see
:func:`~kun.model.errors.error_from_chunk`). Abort = cancelling the consuming
scope: the read in progress is cancelled, the response closed (shielded,
bounded) and nothing more is read. Consume under ``contextlib.aclosing`` so a
consumer that stops early closes the response at once too.

Idle timeout and decode timing: see :mod:`kun.model.reading`. httpx's own
read timeout is off; the idle deadline also bounds the wait for headers.

Resending (:mod:`kun.model.retry`): only before any chunk but usage reached
the caller; the sleep observes cancellation. A 400/422 that names
``stream_options``/``include_usage`` is resent once without
``stream_options``, and the endpoint is remembered in the state clones share.
A 5xx from DeepSeek's official host adds the result of a ``GET .../v1/models``
probe to the message: DeepSeek down, or DeepSeek unreachable from here.

Proxy: ``proxy`` is given to the ``httpx.AsyncClient`` this client builds and
to nothing else (no environment variable, no other client), so it covers
model requests only. A real transport failure with a proxy configured says
to check it; an abort is not a failure and produces no chunk at all.

The chunk contracts stay as they are: :class:`~kun.model.reading.CallStats`
go to ``on_stats`` when a call ends (safe with concurrent calls), and
:attr:`HttpModelClient.last_stats` keeps the latest for convenience.
"""

from __future__ import annotations

import copy
import logging
import random
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from contextlib import AbstractContextManager, aclosing
from typing import TYPE_CHECKING, Self

import anyio
import httpx
import msgspec

from kun.contracts.model import (
    CompletedChunk,
    ErrorChunk,
    ModelRequest,
    ModelStreamChunk,
    UsageChunk,
    WireFormat,
)
from kun.model.body import RequestBody, encode_body
from kun.model.classify import classify_response
from kun.model.endpoints import (
    EndpointFormat,
    is_deepseek_host,
    models_probe_url,
    resolve_endpoint,
)
from kun.model.errors import (
    APIEmptyResponseError,
    APIStatusError,
    AttachmentTooLarge,
    ChatProviderError,
    StreamIdleTimeout,
)
from kun.model.reading import CallRecord, CallStats, Failure, ResponseBody, SSEReader, screen
from kun.model.redact import Redactor, redact_url
from kun.model.request_codec import RequestCodec, codec_for
from kun.model.retry import GiveUp, RetryPolicy, format_wait, parse_retry_after, server_date
from kun.model.transport import TRACE_HEADERS, header_problem, translate_errors
from kun.model.wire import new_decoder

if TYPE_CHECKING:
    from kun.model.debug import CallObserver, CallTap

__all__ = ["ANTHROPIC_VERSION", "CallStats", "HttpModelClient"]

ANTHROPIC_VERSION = "2023-06-01"
_ERROR_BODY_LIMIT = 64 * 1024
_CLOSE_TIMEOUT = 5.0
_PROBE_TIMEOUT = 5.0
_log = logging.getLogger("kun.model")


class _Shared:
    """What clones share: the transport, and what was learnt about endpoints."""

    def __init__(self, http: httpx.AsyncClient, owns_http: bool) -> None:
        self.http = http
        self.owns_http = owns_http
        self.no_stream_options: set[str] = set()


class HttpModelClient:
    """A model behind an HTTP endpoint, in one of the wire formats.

    ``wire_format`` may be ``custom_endpoint``: ``base_url`` is then the full
    URL and names its format (see :mod:`kun.model.endpoints`); a bad endpoint
    raises :class:`~kun.model.errors.EndpointConfigError` here, before
    anything is sent. ``http`` is an ``httpx.AsyncClient`` to share; without
    one the client builds its own (with ``proxy``, if given) and
    :meth:`aclose` closes it. ``proxy`` with ``http`` is refused: kun could
    not apply it; ``shared_proxy`` instead says that ``http`` was built with
    that proxy (one client shared per provider, :mod:`kun.model.factory`), so
    transport-failure messages name it. ``observer`` (a
    :class:`~kun.model.debug.CallObserver`, the debug recorder) is told each
    call's raw bodies and chunks; without one, nothing is recorded. A
    request's own ``max_tokens`` and ``reasoning_effort`` win over the
    client's (:meth:`with_max_completion_tokens`, :meth:`with_thinking`).
    ``streaming=False`` asks for one JSON answer. ``vertex`` (project,
    location) sends a ``gemini`` request to Vertex AI, with ``api_key`` as
    a bearer token. ``sleep``, ``rng`` and ``clock`` are injectable for
    tests.
    """

    def __init__(
        self,
        provider: str,
        model: str,
        base_url: str,
        wire_format: EndpointFormat = "chat_completions",
        *,
        api_key: str | None = None,
        headers: Mapping[str, str] | None = None,
        http: httpx.AsyncClient | None = None,
        retry: RetryPolicy | None = None,
        idle_timeout: float = 450.0,
        proxy: str | None = None,
        codec: RequestCodec | None = None,
        streaming: bool = True,
        connect_timeout: float = 30.0,
        sleep: Callable[[float], Awaitable[None]] = anyio.sleep,
        rng: random.Random | None = None,
        clock: Callable[[], float] = time.perf_counter,
        on_stats: Callable[[CallStats], None] | None = None,
        observer: CallObserver | None = None,
        shared_proxy: str | None = None,
        catalog: str | None = None,
        vertex: tuple[str, str] | None = None,
    ) -> None:
        if http is not None and proxy is not None:
            raise ValueError("pass the proxy to the httpx.AsyncClient you provide, not here")
        if http is None and shared_proxy is not None:
            raise ValueError("shared_proxy names the proxy of the httpx.AsyncClient you provide")
        if idle_timeout <= 0:
            raise ValueError("idle_timeout must be positive")
        endpoint = resolve_endpoint(
            base_url, wire_format, model=model, stream=streaming, vertex=vertex
        )
        self._provider = provider
        self._model = model
        self._catalog = catalog or provider
        self._base_url = base_url
        self._url = endpoint.url
        self._format: WireFormat = endpoint.wire_format
        self._codec = codec or codec_for(endpoint.wire_format)
        self._retry = retry or RetryPolicy()
        self._idle = idle_timeout
        self._proxy = proxy if proxy is not None else shared_proxy
        self._streaming = streaming
        self._timeout = httpx.Timeout(connect_timeout, read=None)
        self._sleep = sleep
        self._rng = rng or random.Random()
        self._clock = clock
        self._on_stats = on_stats
        self._observer = observer
        self._thinking: str | None = None
        self._max_tokens: int | None = None
        extra = {name.lower(): value for name, value in (headers or {}).items()}
        self._headers = _auth_headers(endpoint.wire_format, api_key, vertex is not None) | extra
        self._redactor = Redactor.for_request(api_key, self._headers, self._proxy)
        self._unsendable = header_problem(self._headers)
        if http is None:
            http = httpx.AsyncClient(proxy=proxy, timeout=self._timeout)
            self._shared = _Shared(http, owns_http=True)
        else:
            self._shared = _Shared(http, owns_http=False)
        self.last_stats: CallStats | None = None

    @property
    def provider(self) -> str:
        return self._provider

    @property
    def model(self) -> str:
        return self._model

    @property
    def endpoint_url(self) -> str:
        return self._url

    @property
    def wire_format(self) -> WireFormat:
        return self._format

    @property
    def http(self) -> httpx.AsyncClient:
        """The transport, shared by every clone."""
        return self._shared.http

    @property
    def thinking(self) -> str | None:
        return self._thinking

    @property
    def max_completion_tokens(self) -> int | None:
        return self._max_tokens

    def with_thinking(self, effort: str) -> Self:
        """A clone asking for reasoning ``effort`` (an open string)."""
        clone = copy.copy(self)
        clone._thinking = effort
        return clone

    def with_max_completion_tokens(self, n: int) -> Self:
        """A clone capping the answer at ``n`` tokens."""
        if n < 1:
            raise ValueError("max completion tokens must be positive")
        clone = copy.copy(self)
        clone._max_tokens = n
        return clone

    async def aclose(self) -> None:
        """Close the transport if this client built it (every clone shares it)."""
        if self._shared.owns_http:
            await self._shared.http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def stream(self, request: ModelRequest) -> AsyncGenerator[ModelStreamChunk, None]:
        """Stream one model call (see the module docstring for the contract)."""
        call = CallRecord(self._clock)
        observer = self._observer
        tap = (
            None
            if observer is None
            else observer.start(self._provider, self._model, self._url, self._redactor)
        )
        payload = self._payload(request)
        if isinstance(payload, ErrorChunk):
            yield payload
            return
        delay = 0.0
        try:
            while True:
                if delay > 0:
                    await self._sleep(delay)
                failure: Failure | None = None
                if tap is not None:
                    tap.request(payload.join())
                async with aclosing(self._attempt(payload, call, tap)) as items:
                    async for item in items:
                        if isinstance(item, Failure):
                            failure = item
                            break
                        yield self._seen(item, call, tap)
                if failure is None:
                    return
                step = await self._after(failure, call, payload)
                if isinstance(step, float):
                    delay = step
                    continue
                call.outcome = step[-1].code if isinstance(step[-1], ErrorChunk) else "error"
                for chunk in step:
                    if tap is not None:
                        tap.chunk(chunk)
                    yield chunk
                return
        finally:
            self.last_stats = stats = call.stats()
            if self._on_stats is not None:
                self._on_stats(stats)
            if tap is not None:
                tap.finish(stats)

    async def _attempt(
        self, payload: RequestBody, call: CallRecord, tap: CallTap | None = None
    ) -> AsyncGenerator[ModelStreamChunk | Failure, None]:
        """One send: its chunks, or a :class:`Failure` as the last item."""
        call.attempts += 1
        call.first_byte = None
        try:
            response = await self._send(payload, call)
        except ChatProviderError as error:
            yield Failure(error)
            return
        call.status = response.status_code
        body = ResponseBody(
            response, self._idle, call, self._edge, tap=tap.frame if tap is not None else None
        )
        reader: SSEReader | None = None
        try:
            if response.status_code >= 400:
                yield await self._refusal(response, body, payload)
                return
            if _is_json(response):
                raw = await body.read_all()
                if not raw.strip():
                    raise APIEmptyResponseError("the provider answered 200 with an empty body")
                for item in screen(new_decoder(self._format).materialize(raw)):
                    yield item
                return
            reader = SSEReader(body, self._format)
            while (batch := await reader.batch()) is not None:
                for item in screen(batch):
                    yield item
        except ChatProviderError as error:
            yield Failure(error)
        finally:
            if reader is not None:
                call.absorb(reader.parser, reader.decoder)
            with anyio.move_on_after(_CLOSE_TIMEOUT, shield=True):
                await response.aclose()

    async def _send(self, payload: RequestBody, call: CallRecord) -> httpx.Response:
        if self._unsendable is not None:
            raise self._unsendable
        accept = "text/event-stream" if self._streaming else "application/json"
        with self._edge():
            request = self._shared.http.build_request(
                "POST",
                self._url,
                content=payload.stream(),
                headers={
                    **self._headers,
                    **(TRACE_HEADERS.get() or {}),
                    "accept": accept,
                    "content-type": "application/json",
                    "content-length": str(len(payload)),
                },
                timeout=self._timeout,
            )
        call.sent = started = call.clock()
        try:
            with anyio.move_on_after(self._idle), self._edge():
                return await self._shared.http.send(request, stream=True)
        finally:
            call.server_wait += call.clock() - started
        raise StreamIdleTimeout(f"the provider did not answer within {format_wait(self._idle)}")

    async def _refusal(
        self, response: httpx.Response, body: ResponseBody, payload: RequestBody
    ) -> Failure:
        raw = await body.read_all(_ERROR_BODY_LIMIT)
        status = response.status_code
        url = redact_url(self._url)
        error = classify_response(
            status, raw, retry_after=parse_retry_after(response.headers), url=url
        )
        _log.warning(
            "model request failed: POST %s -> HTTP %d: %s", url, status, self._redactor.body(raw)
        )
        lowered = raw.lower()
        drop = (
            status in (400, 422)
            and "stream_options" in payload.fields
            and (b"stream_options" in lowered or b"include_usage" in lowered)
        )
        return Failure(error, drop_stream_options=drop, server_now=server_date(response.headers))

    def _payload(self, request: ModelRequest) -> RequestBody | ErrorChunk:
        """The request body, or the error chunk saying why it cannot be sent
        (the port promises chunks, not exceptions)."""
        try:
            payload = encode_body(
                self._codec,
                request,
                model=self._model,
                stream=self._streaming,
                max_tokens=request.max_tokens or self._max_tokens,
                reasoning_effort=request.reasoning_effort or self._thinking,
            )
        except AttachmentTooLarge as exc:
            return ErrorChunk(message=str(exc), code="attachment_too_large")
        if self._url in self._shared.no_stream_options:
            payload.fields.pop("stream_options", None)
        return payload

    def _seen(
        self, item: ModelStreamChunk, call: CallRecord, tap: CallTap | None
    ) -> ModelStreamChunk:
        """Book one chunk on its way out: price usage, note output and outcome."""
        if isinstance(item, UsageChunk):
            item = self._priced(item)
        else:
            call.output = True
        if isinstance(item, CompletedChunk):
            call.outcome = "completed"
        if tap is not None:
            tap.chunk(item)
        return item

    def _priced(self, chunk: UsageChunk) -> UsageChunk:
        """``chunk`` with its cost: the provider's if it reported one, else the
        price table's for this model (``catalog`` names it there)."""
        from kun.model.pricing import with_cost

        usage, cost = with_cost(chunk.usage, self._catalog, self._model)
        if cost is None:
            return chunk
        return msgspec.structs.replace(chunk, usage=usage, price_source=cost.source)

    async def _after(
        self, failure: Failure, call: CallRecord, payload: RequestBody
    ) -> float | list[ModelStreamChunk]:
        """After a failed attempt: the wait before resending, or the final chunks."""
        error = failure.error
        if failure.drop_stream_options and "stream_options" in payload.fields:
            del payload.fields["stream_options"]
            self._shared.no_stream_options.add(self._url)
            call.free_resends += 1
            _log.info("resending without stream_options to %s", redact_url(self._url))
            return 0.0
        message = str(error)
        if not call.output:
            decision = self._retry.decide(
                error,
                attempt=call.attempts - call.free_resends,
                in_stream=failure.in_stream,
                rng=self._rng,
                now=failure.server_now,
            )
            if not isinstance(decision, GiveUp):
                _log.info(
                    "retrying in %.2f s (attempt %d): %s",
                    decision.delay,
                    call.attempts,
                    self._redactor.text(message),
                )
                return decision.delay
            message = f"{message}; {decision.note}" if decision.note else message
        if not failure.in_stream and isinstance(error, APIStatusError) and error.status_code >= 500:
            message += await self._deepseek_probe()
        final = ErrorChunk(message=self._redactor.text(message), code=error.code)
        _log.warning("model call failed (%s): %s", final.code, final.message)
        return [failure.usage, final] if failure.usage is not None else [final]

    async def _deepseek_probe(self) -> str:
        """Tell "DeepSeek is down" from "DeepSeek is unreachable from here"."""
        if not is_deepseek_host(self._url):
            return ""
        target = models_probe_url(self._base_url)
        try:
            with anyio.fail_after(_PROBE_TIMEOUT), self._edge(target):
                probe = await self._shared.http.get(
                    target, headers=self._headers, timeout=_PROBE_TIMEOUT
                )
        except (ChatProviderError, TimeoutError) as exc:
            return (
                f". DeepSeek is unreachable from here: the probe failed too "
                f"({exc or f'no answer from {target}'}); check your network"
            )
        if probe.status_code >= 500:
            return f". DeepSeek looks down: the probe GET {target} answered {probe.status_code} too"
        return (
            f". DeepSeek is reachable (the probe GET {target} answered HTTP "
            f"{probe.status_code}): the failure is on DeepSeek's side; try again later"
        )

    def _edge(self, url: str | None = None) -> AbstractContextManager[None]:
        """Translate httpx's exceptions into the model layer's, once
        (:mod:`kun.model.transport`). ``url`` is the target named in
        messages (default: the endpoint)."""
        return translate_errors(url or self._url, self._proxy)


def _is_json(response: httpx.Response) -> bool:
    kind = str(response.headers.get("content-type", "")).partition(";")[0].strip().lower()
    return kind == "application/json" or kind.endswith("+json")


def _auth_headers(format: WireFormat, api_key: str | None, vertex: bool) -> dict[str, str]:
    """The user agent and the credential where the format wants it: Gemini's
    key in ``x-goog-api-key`` (never in the URL, where logs would keep it),
    Vertex AI's access token as a bearer token."""
    headers = {"user-agent": "kun"}
    if format == "messages":
        headers["anthropic-version"] = ANTHROPIC_VERSION
        if api_key:
            headers["x-api-key"] = api_key
    elif format == "gemini" and not vertex:
        if api_key:
            headers["x-goog-api-key"] = api_key
    elif api_key:
        headers["authorization"] = f"Bearer {api_key}"
    return headers
