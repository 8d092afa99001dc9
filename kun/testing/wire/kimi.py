"""Chunks as Moonshot (Kimi) streams them: chat completions with its own
usage.

What differs from :mod:`.chat_completions`: the usage comes inside the
last choice (the one carrying the finish reason), not in an empty-choices
chunk, and its cached part is the top-level ``cached_tokens`` of the usage
object (no ``prompt_tokens_details``). Reasoning streams as
``reasoning_content`` deltas, as for DeepSeek. Moonshot reports no
reasoning-token count and no cost, so those are dropped. The non-streaming
body carries the same usage object.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from kun.contracts.model import ModelStreamChunk
from kun.contracts.usage import UsageSnapshot
from kun.testing.wire.base import encode, summarize
from kun.testing.wire.chat_completions import ChatCompletionsRenderer, chat_completions_body

__all__ = ["KimiRenderer", "kimi_body", "kimi_usage"]


def kimi_usage(usage: UsageSnapshot) -> dict[str, Any]:
    """Moonshot's usage object: the prompt includes ``cached_tokens``."""
    return {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.prompt_tokens + usage.completion_tokens,
        "cached_tokens": usage.cache_hit_tokens,
    }


class KimiRenderer(ChatCompletionsRenderer):
    default_id = "chatcmpl-kimi-fake"

    def complete(self, stop_reason: str) -> None:
        choice: dict[str, Any] = {
            "index": 0,
            "delta": {},
            "finish_reason": stop_reason if self.finish_reason else None,
        }
        if self.usage is not None:
            choice["usage"] = kimi_usage(self.usage)
        if self.finish_reason or self.usage is not None:
            self.emit(None, {**self.head, "choices": [choice]})
        if self.done:
            self.frames.append((None, b"[DONE]"))

    def send_usage(self) -> None:
        if self.usage is not None:
            self.emit(None, {**self.head, "choices": [], "usage": kimi_usage(self.usage)})


def kimi_body(chunks: Sequence[ModelStreamChunk]) -> bytes:
    """A non-streaming ``chat.completion`` with Moonshot's usage object."""
    body = msgspec.json.decode(chat_completions_body(chunks))
    usage = summarize(chunks).usage
    if usage is not None and "usage" in body:
        body["usage"] = kimi_usage(usage.usage)
    return encode(body)
