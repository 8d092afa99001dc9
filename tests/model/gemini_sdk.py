"""kun's Gemini decoder against Google's own SDK (``google-genai``), on the
same bytes.

:func:`random_stream` writes a well-formed Gemini SSE body from a seeded
``random.Random`` (text, thoughts, function calls with nested arguments,
thought signatures on any part, empty signature-only parts, usage reports,
every finish reason kun treats apart, compact or spaced JSON, ASCII or raw
UTF-8 including U+2028, LF or CRLF framing) and :func:`cut` cuts it into
random byte pieces. :func:`kun_outcome` decodes the pieces with kun's
parser and decoder; :func:`sdk_outcome` has the SDK itself read them: a
real ``genai.Client`` whose httpx transport answers with those pieces,
``models.generate_content_stream`` parsing each event into a
``GenerateContentResponse``, combined the SDK's way (``chunk.text``,
``chunk.function_calls``, the last ``finish_reason`` and
``usage_metadata``). Both give an :class:`Outcome`; they must be equal.

The SDK reports what Gemini said; kun maps it to its own vocabulary. The
mapping is restated here (:func:`expected_end`, the usage arithmetic in
:meth:`SdkReader.outcome`, no call settled from an answer that failed) so
a change on either side shows up as a mismatch.
"""

from __future__ import annotations

import base64
import json
import random
import string
from collections.abc import Iterator
from typing import Any, NamedTuple

import httpx
import msgspec

from kun.contracts.model import (
    CompletedChunk,
    ErrorChunk,
    ReasoningDeltaChunk,
    TextDeltaChunk,
    ToolCallCompleteChunk,
    UsageChunk,
)
from kun.model.sse import SSEParser
from kun.model.wire.gemini import BROKEN, FILTERED, GeminiDecoder

NAMES = ("read_file", "bash", "edit_file", "a.b:c", "_x-1")
FINISH = ("STOP", "MAX_TOKENS", "SAFETY", "RECITATION", "MALFORMED_FUNCTION_CALL", "OTHER")
_TEXT = string.ascii_letters + string.digits + " .,:;{}[]\"'\\/\n\t\r" + "é中😀\u2028\u2029\x85"


class Outcome(NamedTuple):
    text: str
    thoughts: str
    calls: list[tuple[str, Any]]
    end: str
    usage: tuple[int, int, int, int] | None


def _text(rng: random.Random, empty: bool = True) -> str:
    if empty and rng.random() < 0.1:
        return ""
    return "".join(rng.choice(_TEXT) for _ in range(rng.randint(1, 12)))


def _value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(7 if depth < 3 else 4)
    if kind == 0:
        return None
    if kind == 1:
        return rng.random() < 0.5
    if kind == 2:
        return rng.randint(-(10**6), 10**6)
    if kind == 3:
        return _text(rng)
    if kind == 4:
        return round(rng.uniform(-1000, 1000), rng.randint(0, 6))
    if kind == 5:
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return _object(rng, depth + 1)


def _object(rng: random.Random, depth: int = 0) -> dict[str, Any]:
    return {_text(rng, empty=False): _value(rng, depth) for _ in range(rng.randint(0, 3))}


def _signature(rng: random.Random) -> str:
    """Signatures are base64 (the SDK decodes them to bytes)."""
    return base64.b64encode(rng.randbytes(rng.randint(1, 48))).decode()


def _part(rng: random.Random) -> dict[str, Any]:
    kind = rng.random()
    part: dict[str, Any]
    if kind < 0.4:
        part = {"text": _text(rng)}
    elif kind < 0.65:
        part = {"text": _text(rng), "thought": True}
    elif kind < 0.9:
        call: dict[str, Any] = {"name": rng.choice(NAMES), "args": _object(rng)}
        if rng.random() < 0.1:
            call["id"] = f"fc-{rng.randrange(10**6)}"
        part = {"functionCall": call}
    else:
        part = {"text": ""}
    if rng.random() < 0.3 or part == {"text": ""}:
        part["thoughtSignature"] = _signature(rng)
    return part


def _usage(rng: random.Random) -> dict[str, Any]:
    usage = {
        "promptTokenCount": rng.randint(0, 5000),
        "candidatesTokenCount": rng.randint(0, 500),
    }
    if rng.random() < 0.6:
        usage["thoughtsTokenCount"] = rng.randint(0, 500)
    if rng.random() < 0.4:
        usage["cachedContentTokenCount"] = rng.randint(0, usage["promptTokenCount"])
    if rng.random() < 0.1:
        usage["toolUsePromptTokenCount"] = rng.randint(0, 100)
    usage["totalTokenCount"] = sum(usage.values())
    return usage


def random_events(rng: random.Random) -> list[dict[str, Any]]:
    """The responses of one random, well-formed stream."""
    events: list[dict[str, Any]] = []
    count = rng.randint(1, 6)
    for n in range(count):
        parts = [_part(rng) for _ in range(rng.randint(0, 3))]
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
        last = n == count - 1
        if last and rng.random() < 0.92:
            candidate["finishReason"] = rng.choice(FINISH)
        event: dict[str, Any] = {"candidates": [candidate]}
        if rng.random() < 0.5 or (last and rng.random() < 0.9):
            event["usageMetadata"] = _usage(rng)
        event["modelVersion"] = "gemini-2.5-flash"
        event["responseId"] = "resp-1"
        events.append(event)
    return events


def render(events: list[dict[str, Any]], rng: random.Random) -> bytes:
    """SSE framing as Gemini sends it (CRLF or LF), JSON compact or spaced."""
    end = "\r\n" if rng.random() < 0.5 else "\n"
    compact = rng.random() < 0.5
    ascii_only = rng.random() < 0.5
    out = []
    for event in events:
        data = json.dumps(
            event,
            ensure_ascii=ascii_only,
            separators=(",", ":") if compact else (", ", ": "),
        )
        out.append(f"data: {data}{end}{end}")
    return "".join(out).encode()


def random_stream(rng: random.Random) -> bytes:
    return render(random_events(rng), rng)


def cut(data: bytes, rng: random.Random) -> list[bytes]:
    """``data`` in random pieces (some a byte long, some empty-free runs)."""
    pieces: list[bytes] = []
    at = 0
    while at < len(data):
        size = rng.choice((1, 2, 3, rng.randint(1, 64), rng.randint(1, 512)))
        pieces.append(data[at : at + size])
        at += size
    return pieces


def kun_outcome(pieces: list[bytes]) -> Outcome:
    parser, decoder = SSEParser(), GeminiDecoder()
    chunks = []
    for piece in pieces:
        chunks += decoder.feed_all(parser.feed(piece))
    chunks += decoder.feed_all(parser.flush())
    chunks += decoder.finish()
    text = "".join(c.text for c in chunks if isinstance(c, TextDeltaChunk))
    thoughts = "".join(c.text for c in chunks if isinstance(c, ReasoningDeltaChunk))
    calls = [
        (c.name, msgspec.json.decode(bytes(c.arguments)))
        for c in chunks
        if isinstance(c, ToolCallCompleteChunk)
    ]
    last = chunks[-1]
    end = last.stop_reason if isinstance(last, CompletedChunk) else ""
    if isinstance(last, ErrorChunk):
        end = f"error:{last.code}"
    found = [c for c in chunks if isinstance(c, UsageChunk)]
    usage = None
    if found:
        u = found[-1].usage
        usage = (u.prompt_tokens, u.completion_tokens, u.reasoning_tokens, u.cache_hit_tokens)
    return Outcome(text, thoughts, calls, end, usage)


class SdkReader:
    """One ``genai.Client`` whose transport answers every request with the
    pieces last given to :meth:`outcome` (no network)."""

    def __init__(self) -> None:
        from google import genai
        from google.genai import types

        self._pieces: list[bytes] = []
        transport = httpx.MockTransport(self._answer)
        options = types.HttpOptions(httpx_client=httpx.Client(transport=transport))
        self._client = genai.Client(api_key="test-key", http_options=options)

    def _answer(self, request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200,
            headers={"content-type": "text/event-stream"},
            stream=_Pieces(list(self._pieces)),
        )

    def outcome(self, pieces: list[bytes]) -> Outcome:
        self._pieces = pieces
        chunks = list(
            self._client.models.generate_content_stream(model="gemini-2.5-flash", contents="hi")
        )
        text = "".join(c.text or "" for c in chunks)
        thoughts = ""
        calls: list[tuple[str, Any]] = []
        reason: str | None = None
        usage_metadata = None
        for chunk in chunks:
            candidate = chunk.candidates[0] if chunk.candidates else None
            if candidate is not None and candidate.content and candidate.content.parts:
                thoughts += "".join(p.text or "" for p in candidate.content.parts if p.thought)
            calls += [(f.name or "", f.args or {}) for f in chunk.function_calls or ()]
            if candidate is not None and candidate.finish_reason is not None:
                reason = candidate.finish_reason.value
            if chunk.usage_metadata is not None:
                usage_metadata = chunk.usage_metadata
        usage = None
        if usage_metadata is not None:
            thoughts_count = usage_metadata.thoughts_token_count or 0
            prompt = (usage_metadata.prompt_token_count or 0) + (
                usage_metadata.tool_use_prompt_token_count or 0
            )
            usage = (
                prompt,
                (usage_metadata.candidates_token_count or 0) + thoughts_count,
                thoughts_count,
                min(usage_metadata.cached_content_token_count or 0, prompt),
            )
        end = expected_end(reason, bool(calls))
        if end.startswith("error:"):
            calls = []
        return Outcome(text, thoughts, calls, end, usage)

    def close(self) -> None:
        self._client.close()


def expected_end(reason: str | None, called: bool) -> str:
    """kun's ending for the finish reason Gemini gave (see
    :mod:`kun.model.wire.gemini`)."""
    if reason is None:
        return "error:stream_truncated"
    if reason in BROKEN:
        return f"error:{reason.lower()}"
    if reason in FILTERED:
        return "content_filter"
    plain = {"STOP": "stop", "MAX_TOKENS": "length"}.get(reason, reason.lower())
    return "tool_calls" if called and plain in ("stop", "length") else plain


class _Pieces(httpx.SyncByteStream):
    def __init__(self, pieces: list[bytes]) -> None:
        self._pieces = pieces

    def __iter__(self) -> Iterator[bytes]:
        yield from self._pieces


def mismatch(seed: int, reader: SdkReader) -> tuple[Outcome, Outcome] | None:
    """Both outcomes for stream ``seed`` when they differ, else ``None``."""
    rng = random.Random(seed)
    pieces = cut(random_stream(rng), rng)
    ours, theirs = kun_outcome(pieces), reader.outcome(pieces)
    return None if ours == theirs else (ours, theirs)
