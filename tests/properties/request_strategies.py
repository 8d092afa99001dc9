"""Hypothesis strategies for item histories of threads that move between
providers and models (issue 8, items 13-17).

Each turn of :func:`switching_threads` is produced by one of several
providers, drawn per turn, each with its own habits:

* ``openai``: ``call_0``-style ids that repeat from one step to the next;
* ``claude``: ``toolu_…`` ids and signed thinking, sometimes signature-only
  (its text omitted) and sometimes recorded after the calls it came before
  (as kun's loop did);
* ``deepseek``: unsigned reasoning, or none (thinking switched on or off
  mid-thread);
* ``kimi``: ``functions.<name>:<n>`` ids, numbered again in every turn;
* ``vllm``: 46-character ``chatcmpl-tool-…`` ids;
* ``relay``: kun's synthesized ``__kun_stream_tool_call_index_<n>``, the same
  on every response (logs written before ids were made unique);
* ``gemini``: no call id from the provider (the call item's id, as the
  runtime records it; sometimes a Gemini ``id``), Gemini thought signatures
  on its thought summaries, its text and the first call of a step (never an
  Anthropic ``signature``), sometimes thoughts without one.

Any of them may call a tool by a name no format accepts
(``functions.read_file``, ``multi_tool_use.parallel``), leave a call
unanswered, answer one twice, or be steered between a call and its result;
a turn may start from a blank prompt (old logs) and end on an answer with
trailing whitespace, or on none.
"""

from __future__ import annotations

import msgspec
from hypothesis import strategies as st

from kun.contracts.items import (
    AssistantReasoning,
    AssistantText,
    Item,
    ToolCall,
    ToolResult,
    UserMessage,
)

__all__ = ["PRODUCERS", "switching_threads"]

PRODUCERS = ("openai", "claude", "deepseek", "kimi", "vllm", "relay", "gemini")
GEMINI_SIGNATURES = st.sampled_from(["Z2VtLTE=", "Z2VtLTI=", "CiQBcsjafA=="])

_HEX = ("0123456789abcdef" * 2, "fedcba9876543210" * 2)
_TOOLS = st.sampled_from(["read_file", "read_file", "grep"])
_HALLUCINATED = st.sampled_from(
    ["functions.read_file", "multi_tool_use.parallel", "read file", "t" * 70, ""]
)
_PROMPTS = st.sampled_from(["Fix the test.", "And b.py?", "go on", " ", ""])
_ANSWERS = st.sampled_from(["Done.", "It prints A.\n\n", "Fixed it. ", "\n"])
_ARGS = st.sampled_from([b'{"path":"a.py"}', b"{}", b"{broken"])


def _call_id(draw: st.DrawFn, producer: str, name: str, n: int) -> str:
    if producer == "openai":
        return draw(st.sampled_from(["call_0", "call_1", f"call_{n}"]))
    if producer == "claude":
        return draw(st.sampled_from(["toolu_01A", "toolu_01B", f"toolu_01X{n}"]))
    if producer == "deepseek":
        return f"call_0{n}_" + draw(st.sampled_from(["a1", "b2"]))
    if producer == "kimi":
        return f"functions.{name}:{n}"
    if producer == "vllm":
        return "chatcmpl-tool-" + draw(st.sampled_from(_HEX))
    if producer == "gemini":
        return draw(st.sampled_from([f"call_01gem{n:04d}", f"call_01gem{n:04d}", "fc-1"]))
    return f"__kun_stream_tool_call_index_{draw(st.sampled_from([0, 0, n]))}"


def _reasoning(draw: st.DrawFn, producer: str) -> AssistantReasoning | None:
    if producer == "claude":
        text = draw(st.sampled_from(["", "", "Check the test first."]))
        return AssistantReasoning(id="", text=text, signature=f"sig-{draw(st.integers(0, 9))}")
    if producer == "deepseek" and draw(st.booleans()):
        return AssistantReasoning(id="", text="Think about a.py.")
    if producer == "gemini" and draw(st.booleans()):
        signature = draw(st.none() | GEMINI_SIGNATURES)
        return AssistantReasoning(id="", text="**Reading** a.py", thought_signature=signature)
    return None


def _step(draw: st.DrawFn, producer: str, counter: list[int]) -> list[Item]:
    """One model step calling tools, then its results (usually all)."""
    output: list[Item] = []
    gemini = producer == "gemini"
    if draw(st.booleans()):
        signed = draw(st.none() | GEMINI_SIGNATURES) if gemini else None
        output.append(AssistantText(id="", text="Reading.", thought_signature=signed))
    calls: list[ToolCall] = []
    for _ in range(draw(st.integers(1, 3))):
        name = draw(_HALLUCINATED) if draw(st.integers(0, 5)) == 0 else draw(_TOOLS)
        counter[0] += 1
        call_id = _call_id(draw, producer, name, counter[0])
        if any(c.call_id == call_id for c in calls):
            continue
        signature = draw(GEMINI_SIGNATURES) if gemini and not calls else None
        calls.append(
            ToolCall(
                id="",
                call_id=call_id,
                name=name,
                arguments=msgspec.Raw(draw(_ARGS)),
                thought_signature=signature,
            )
        )
    output += calls
    reasoning = _reasoning(draw, producer)
    if reasoning is not None:
        late = producer == "claude" and draw(st.booleans())
        output = [*output, reasoning] if late else [reasoning, *output]
    answered = draw(st.permutations(calls))
    if draw(st.integers(0, 6)) == 0:
        answered = answered[1:]
    results: list[Item] = []
    for call in answered:
        if draw(st.integers(0, 6)) == 0:
            results.append(UserMessage(id="", text="also check b.py", steered=True))
        results.append(
            ToolResult(
                id="",
                call_id=call.call_id,
                name=call.name,
                output=draw(st.sampled_from(["ok", "", "unknown tool"])),
                is_error=draw(st.booleans()),
            )
        )
        if draw(st.integers(0, 8)) == 0:
            results.append(results[-1])
    return [*output, *results]


def _turn(draw: st.DrawFn, producer: str, min_steps: int = 0) -> list[Item]:
    items: list[Item] = [UserMessage(id="", text=draw(_PROMPTS))]
    counter = [0]
    for _ in range(draw(st.integers(min_steps, 3))):
        items += _step(draw, producer, counter)
    ending = draw(st.sampled_from(["answer", "answer", "aborted", "none"]))
    if ending != "none":
        status = "completed" if ending == "answer" else "aborted"
        answer = AssistantText(id="", text=draw(_ANSWERS), status=status)
        reasoning = _reasoning(draw, producer)
        items += [reasoning, answer] if reasoning is not None else [answer]
    return items


@st.composite
def switching_threads(draw: st.DrawFn, last: str | None = None) -> tuple[Item, ...]:
    """A history of 1-5 turns, each by a producer drawn for it; ``last``
    names the producer of a final turn of at least one step, when given."""
    items: list[Item] = []
    for _ in range(draw(st.integers(0 if last else 1, 4))):
        items += _turn(draw, draw(st.sampled_from(PRODUCERS)))
    if last is not None:
        items += _turn(draw, last, min_steps=1)
    return tuple(msgspec.structs.replace(item, id=f"i{n}") for n, item in enumerate(items))
