"""What a model can do, as far as kun needs to know to talk to it.

Read from the bundled models.dev catalogue plus kun's own small table for
what it lacks (endpoint format, reasoning request protocol), overridden by
configuration. An unknown model gets ``UNKNOWN``: an honest "don't know",
all false, never an error.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from kun.contracts.model import WireFormat

ReasoningProtocol = Literal[
    "none",
    "deepseek-chat-completions",
    "glm",
    "mimo",
    "kimi",
    "openai-responses",
    "anthropic-thinking",
    "gemini-thinking",
]
"""How a request asks for reasoning (SPEC §8.3). ``none``: it cannot.
``kimi``: Moonshot's ``thinking: {type: enabled|disabled}``."""

ReasoningHistory = Literal["omit", "required", "forbidden"]
"""What the model wants of earlier reasoning on assistant messages sent back:
``required`` (DeepSeek thinking mode: ``reasoning_content`` on every assistant
message, a single space when there was none), ``forbidden`` (the old
``deepseek-reasoner`` rejects it), ``omit`` (send none, the common case)."""


class ModelCapabilities(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    known: bool = False
    input_modalities: tuple[str, ...] = ()
    max_context_tokens: int | None = None
    max_output_tokens: int | None = None
    tool_use: bool = False
    reasoning: bool = False
    reasoning_protocol: ReasoningProtocol = "none"
    reasoning_history: ReasoningHistory = "omit"
    endpoint_format: WireFormat | None = None

    @property
    def takes_images(self) -> bool:
        return "image" in self.input_modalities


UNKNOWN = ModelCapabilities()
