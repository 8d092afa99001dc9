"""What the three renderers share: SSE framing, usage objects in both token
semantics, and the walk over a chunk sequence."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from kun.contracts.model import (
    CompletedChunk,
    ErrorChunk,
    ModelStreamChunk,
    ReasoningDeltaChunk,
    TextDeltaChunk,
    ToolCallCompleteChunk,
    ToolCallDeltaChunk,
    UsageChunk,
)
from kun.contracts.usage import UsageSnapshot

__all__ = [
    "Frame",
    "Renderer",
    "Summary",
    "anthropic_usage",
    "arguments_text",
    "frame",
    "openai_usage",
    "summarize",
]

Frame = tuple[str | None, bytes]
"""One SSE event before framing: its ``event:`` name (or none) and data."""

encode = msgspec.json.encode


def frame(frames: Sequence[Frame], *, crlf: bool = False, keepalive_every: int = 0) -> bytes:
    """SSE framing: ``event:`` and ``data:`` lines, a blank line after each
    event, a ``: keep-alive`` comment before every ``keepalive_every``-th."""
    end = b"\r\n" if crlf else b"\n"
    out: list[bytes] = []
    for position, (event, data) in enumerate(frames):
        if keepalive_every and position and position % keepalive_every == 0:
            out += (b": keep-alive", end, end)
        if event is not None:
            out += (b"event: ", event.encode(), end)
        for line in data.split(b"\n"):
            out += (b"data: ", line, end)
        out.append(end)
    return b"".join(out)


def arguments_text(chunk: ToolCallCompleteChunk) -> str:
    """The argument text of a settled call, as the provider streamed it."""
    return chunk.arguments_text or bytes(chunk.arguments).decode()


def openai_usage(
    usage: UsageSnapshot, prompt: str = "prompt", completion: str = "completion"
) -> dict[str, Any]:
    """An OpenAI-style usage object (the prompt includes cached tokens) that
    normalizes back to ``usage``; ``input``/``output`` name the Responses
    spelling."""
    details: dict[str, Any] = {"cached_tokens": usage.cache_hit_tokens}
    if usage.cache_write_tokens:
        details["cache_write_tokens"] = usage.cache_write_tokens
    out: dict[str, Any] = {
        f"{prompt}_tokens": usage.prompt_tokens,
        f"{completion}_tokens": usage.completion_tokens,
        "total_tokens": usage.prompt_tokens + usage.completion_tokens,
        f"{prompt}_tokens_details": details,
        f"{completion}_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
    }
    if usage.cache_miss_tokens != max(usage.prompt_tokens - usage.cache_hit_tokens, 0):
        out["prompt_cache_miss_tokens"] = usage.cache_miss_tokens
    if usage.cost_usd is not None:
        out["cost"] = usage.cost_usd
    return out


def anthropic_usage(usage: UsageSnapshot) -> dict[str, Any]:
    """An Anthropic-style usage object: input excludes cache reads and writes.
    Reasoning tokens have no field and are dropped."""
    uncached = usage.prompt_tokens - usage.cache_hit_tokens - usage.cache_write_tokens
    out: dict[str, Any] = {
        "input_tokens": max(uncached, 0),
        "cache_creation_input_tokens": usage.cache_write_tokens,
        "cache_read_input_tokens": usage.cache_hit_tokens,
        "output_tokens": usage.completion_tokens,
    }
    if usage.cost_usd is not None:
        out["cost"] = usage.cost_usd
    return out


class Renderer:
    """One response being rendered. Subclasses turn each chunk kind into
    their format's events; :meth:`run` walks the chunks and stops at the
    first terminal one. The response id and model come from the usage chunk
    (defaults when there is none; left out when it says ``None``)."""

    default_id = "fake"

    def __init__(self, chunks: Sequence[ModelStreamChunk], finish_reason: bool, done: bool) -> None:
        found = next((c for c in chunks if isinstance(c, UsageChunk)), None)
        self.usage = found.usage if found is not None else None
        self.head: dict[str, Any] = {}
        if found is None or found.request_id is not None:
            self.head["id"] = found.request_id if found is not None else self.default_id
        if found is None or found.model is not None:
            self.head["model"] = found.model if found is not None else "fake-model"
        self.finish_reason = finish_reason
        self.done = done
        self.frames: list[Frame] = []

    def run(self, chunks: Sequence[ModelStreamChunk]) -> list[Frame]:
        for chunk in chunks:
            match chunk:
                case TextDeltaChunk():
                    self.text(chunk.text)
                case ReasoningDeltaChunk():
                    self.reasoning(chunk)
                case ToolCallDeltaChunk():
                    self.call_delta(chunk)
                case ToolCallCompleteChunk():
                    self.call_complete(chunk)
                case CompletedChunk():
                    self.complete(chunk.stop_reason)
                    break
                case ErrorChunk():
                    self.error(chunk)
                    break
        return self.frames

    def text(self, text: str) -> None:
        raise NotImplementedError

    def reasoning(self, chunk: ReasoningDeltaChunk) -> None:
        raise NotImplementedError

    def call_delta(self, chunk: ToolCallDeltaChunk) -> None:
        raise NotImplementedError

    def call_complete(self, chunk: ToolCallCompleteChunk) -> None:
        raise NotImplementedError

    def complete(self, stop_reason: str) -> None:
        raise NotImplementedError

    def error(self, chunk: ErrorChunk) -> None:
        raise NotImplementedError

    def whole_call(self, chunk: ToolCallCompleteChunk) -> None:
        """A call given only settled streams as one delta carrying it all."""
        self.call_delta(
            ToolCallDeltaChunk(
                call_id=chunk.call_id,
                name=chunk.name,
                arguments=arguments_text(chunk),
                index=chunk.index,
            )
        )

    def emit(self, event: str | None, body: object) -> None:
        self.frames.append((event, encode(body)))


class Summary(msgspec.Struct, kw_only=True):
    """A response folded whole, for non-streaming bodies. ``calls`` holds
    (call id, name, argument text) in call order."""

    text: str = ""
    reasoning: str = ""
    signature: str | None = None
    calls: list[tuple[str, str, str]] = []
    usage: UsageChunk | None = None
    stop_reason: str = "stop"
    error: ErrorChunk | None = None


def summarize(chunks: Sequence[ModelStreamChunk]) -> Summary:
    """Fold a chunk sequence: deltas concatenated, a settled call's text
    taking precedence over its deltas."""
    out = Summary()
    calls: dict[int, list[str]] = {}
    for chunk in chunks:
        match chunk:
            case TextDeltaChunk():
                out.text += chunk.text
            case ReasoningDeltaChunk():
                out.reasoning += chunk.text
                out.signature = chunk.signature or out.signature
            case ToolCallDeltaChunk():
                call = calls.setdefault(chunk.index, [chunk.call_id, "", ""])
                call[0] = chunk.call_id
                call[1] += chunk.name
                call[2] += chunk.arguments
            case ToolCallCompleteChunk():
                calls[chunk.index] = [chunk.call_id, chunk.name, arguments_text(chunk)]
            case UsageChunk():
                out.usage = chunk
            case CompletedChunk():
                out.stop_reason = chunk.stop_reason
                break
            case ErrorChunk():
                out.error = chunk
                break
    out.calls = [(c[0], c[1], c[2]) for _, c in sorted(calls.items())]
    return out
