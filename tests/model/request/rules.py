"""Each provider's hard rules for a request body, as checks.

Every function returns the list of broken rules (empty when the body is
acceptable), so a failing test says which rule and where.

Tool-call ids: unique in the body (Anthropic: "tool_use ids must be
unique"; Responses pairs an output with the call of its id), at most 40
characters on chat completions (OpenAI), at most 64 on Responses, and
``^[a-zA-Z0-9_-]+$`` on Anthropic. Tool names, advertised or called:
``^[a-zA-Z0-9_-]{1,64}$`` (OpenAI and Anthropic). No empty message.
Anthropic: at least one message, even when the history's only user message
was blank; a final assistant turn does not end with whitespace (it is a
prefill), and there is no prefill at all with thinking on; with DeepSeek's
thinking mode (``thinking`` without a budget) every assistant turn that
uses tools carries a thinking block.

Kimi (Moonshot), on top of chat completions (:func:`kimi_violations`):
every tool schema is one Moonshot's validator accepts
(:func:`kimi_schema_violations`: an object root; a ``type`` on every nested
schema that is not a combinator or a ``$ref``; no ``type`` beside
``anyOf``/``oneOf``; ``required`` naming only declared properties; no local
``$ref`` left that could have been inlined); builtin tools (``$web_search``)
go as ``builtin_function`` by name only, and a called builtin keeps its
name; with a thinking model (``thinking`` enabled) every assistant message
that calls tools carries a non-empty ``reasoning_content``; only a final
assistant message is ``partial``.
Gemini (:func:`gemini_violations`): at least one content; roles ``user``
and ``model`` only, alternating, the first a user's; no content without
parts and no part without data (blank text included); every model content
with ``functionCall`` parts is followed at once by a user content opening
with exactly as many ``functionResponse`` parts, of the same names in the
same order (Gemini pairs them by name and position: it has no call ids),
and no ``functionResponse`` answers anything else; function names start
with a letter or ``_`` (``^[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}$``), declared or
called; a ``thought`` part carries its signature; a thought signature is
never an Anthropic one (:func:`foreign_signatures`), and no Anthropic
thinking block carries a Gemini one.

One rule needs the log as well as the body:
:func:`anthropic_thinking_dropped` — with thinking asked for, a body may turn
it off only when the step that opens the final turn has no signed reasoning
to start it with.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

import msgspec

from kun.contracts.items import AssistantReasoning, Item, UserMessage
from kun.domain.history import ModelEntry, UserEntry, repair_history

THINKING = ("thinking", "redacted_thinking")
BUILTIN_NAME = re.compile(r"\$[a-zA-Z0-9_-]{1,64}")
KIMI_COMBINATORS = ("anyOf", "oneOf", "allOf", "not", "if", "then", "else", "$ref")
TOOL_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")
ANTHROPIC_ID = re.compile(r"[a-zA-Z0-9_-]+")
GEMINI_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}")
PART_DATA = ("text", "inlineData", "functionCall", "functionResponse")
CHAT_ID_MAX = 40
RESPONSES_ID_MAX = 64


def _names(where: str, names: Iterable[str]) -> list[str]:
    return [
        f"{where} name {name!r} is not {TOOL_NAME.pattern}"
        for name in names
        if TOOL_NAME.fullmatch(name) is None
    ]


def _ids(ids: list[str], max_length: int | None, pattern: re.Pattern[str] | None) -> list[str]:
    broken = [f"call id {i!r} is used {n} times" for i, n in Counter(ids).items() if n > 1]
    for call_id in ids:
        if not call_id:
            broken.append("empty call id")
        if max_length is not None and len(call_id) > max_length:
            broken.append(f"call id {call_id!r} is longer than {max_length}")
        if pattern is not None and pattern.fullmatch(call_id) is None:
            broken.append(f"call id {call_id!r} is not {pattern.pattern}")
    return broken


def chat_violations(body: dict[str, Any]) -> list[str]:
    broken: list[str] = []
    if body.get("tools") == []:
        broken.append("empty tools array")
    messages = body["messages"]
    calls = [c for m in messages for c in m.get("tool_calls") or ()]
    broken += _ids([c["id"] for c in calls], CHAT_ID_MAX, None)
    broken += _names("tool", (t["function"]["name"] for t in body.get("tools", ())))
    broken += _names("call", (c["function"]["name"] for c in calls))
    for n, message in enumerate(messages):
        content = message.get("content")
        if not content and not message.get("tool_calls"):
            broken.append(f"message {n} ({message['role']}) is empty")
    at = 0
    while at < len(messages):
        message = messages[at]
        at += 1
        if message["role"] == "tool":
            broken.append(f"orphan tool message {message['tool_call_id']} at {at - 1}")
            continue
        if message.get("reasoning_content") == "":
            broken.append(f"empty reasoning_content at {at - 1}")
        calls = message.get("tool_calls")
        if message["role"] != "assistant" or not calls:
            continue
        ids = [call["id"] for call in calls]
        answered = []
        while at < len(messages) and messages[at]["role"] == "tool":
            answered.append(messages[at]["tool_call_id"])
            at += 1
        if Counter(answered) != Counter(ids) or len(set(ids)) != len(ids):
            broken.append(f"calls {ids} answered by {answered}")
    return broken


def responses_violations(body: dict[str, Any]) -> list[str]:
    broken: list[str] = []
    if body.get("tools") == []:
        broken.append("empty tools array")
    items = body["input"]
    calls = [i for i in items if i.get("type") == "function_call"]
    broken += _ids([c["call_id"] for c in calls], RESPONSES_ID_MAX, None)
    broken += _names("tool", (t["name"] for t in body.get("tools", ())))
    broken += _names("call", (c["name"] for c in calls))
    for n, item in enumerate(items):
        if "role" in item and not item["content"]:
            broken.append(f"input {n} ({item['role']}) is empty")
        if item.get("type") == "function_call_output" and not item["output"]:
            broken.append(f"input {n}: empty function_call_output")
    at = 0
    while at < len(items):
        item = items[at]
        if item.get("type") == "function_call_output":
            broken.append(f"orphan output {item['call_id']} at {at}")
            at += 1
            continue
        if item.get("type") != "function_call":
            at += 1
            continue
        ids = []
        while at < len(items) and items[at].get("type") == "function_call":
            ids.append(items[at]["call_id"])
            at += 1
        answered = []
        while at < len(items) and items[at].get("type") == "function_call_output":
            answered.append(items[at]["call_id"])
            at += 1
        if Counter(answered) != Counter(ids) or len(set(ids)) != len(ids):
            broken.append(f"calls {ids} answered by {answered}")
    return broken


def anthropic_violations(body: dict[str, Any]) -> list[str]:
    broken: list[str] = []
    if body.get("tools") == []:
        broken.append("empty tools array")
    if not isinstance(body.get("max_tokens"), int):
        broken.append("max_tokens missing")
    turns = body["messages"]
    if not turns:
        broken.append("no messages")
    uses = [b for turn in turns for b in turn["content"] if b["type"] == "tool_use"]
    broken += _ids([b["id"] for b in uses], None, ANTHROPIC_ID)
    broken += _names("tool", (t["name"] for t in body.get("tools", ())))
    broken += _names("call", (b["name"] for b in uses))
    thinking = body.get("thinking") or {}
    thinking_on = thinking.get("type") == "enabled"
    if turns and turns[-1]["role"] == "assistant":
        last = turns[-1]["content"][-1] if turns[-1]["content"] else {}
        if last.get("type") == "text" and last["text"] != last["text"].rstrip():
            broken.append("the final assistant turn ends with whitespace")
        if thinking_on:
            broken.append("a final assistant turn (a prefill) with thinking on")
    breakpoints = _breakpoints(body)
    if breakpoints > 4:
        broken.append(f"{breakpoints} cache_control breakpoints")
    for n, turn in enumerate(turns):
        broken += _turn_violations(n, turn, turns, thinking_on=thinking_on)
    if thinking_on and "budget_tokens" not in thinking:
        broken += [
            f"turn {n} uses tools without a thinking block (DeepSeek thinking mode)"
            for n, turn in enumerate(turns)
            if turn["role"] == "assistant"
            and any(b["type"] == "tool_use" for b in turn["content"])
            and not any(b["type"] in THINKING for b in turn["content"])
        ]
    if thinking_on and "budget_tokens" in thinking:
        broken += _final_turn_violations(turns)
        if not 1024 <= thinking["budget_tokens"] < body["max_tokens"]:
            broken.append("thinking budget outside [1024, max_tokens)")
    return broken


def _turn_violations(
    n: int, turn: dict[str, Any], turns: list[dict[str, Any]], *, thinking_on: bool
) -> list[str]:
    broken: list[str] = []
    expected = "user" if n % 2 == 0 else "assistant"
    if turn["role"] != expected:
        broken.append(f"turn {n} is {turn['role']}, expected {expected} (roles must alternate)")
    blocks = turn["content"]
    if not blocks:
        broken.append(f"turn {n} is empty")
    for block in blocks:
        if block["type"] == "text" and not block["text"].strip():
            broken.append(f"turn {n} has a blank text block")
        if block["type"] in THINKING and "cache_control" in block:
            broken.append(f"turn {n} has a cached thinking block")
        if block["type"] in THINKING and not thinking_on:
            broken.append(f"turn {n} has a thinking block with thinking off")
    if turn["role"] == "assistant" and blocks and blocks[-1]["type"] in THINKING:
        broken.append(f"turn {n} ends with a thinking block")
    uses = [b["id"] for b in blocks if b["type"] == "tool_use"]
    results = [b["tool_use_id"] for b in blocks if b["type"] == "tool_result"]
    if turn["role"] == "user" and results:
        previous = turns[n - 1]["content"] if n else []
        called = [b["id"] for b in previous if b["type"] == "tool_use"]
        if Counter(results) != Counter(called):
            broken.append(f"turn {n} answers {results}, the turn before called {called}")
        leading = [b["type"] for b in blocks[: len(results)]]
        if leading != ["tool_result"] * len(results):
            broken.append(f"turn {n}: tool_result blocks are not first")
    if uses:
        following = turns[n + 1]["content"] if n + 1 < len(turns) else []
        answered = [b["tool_use_id"] for b in following if b["type"] == "tool_result"]
        if Counter(answered) != Counter(uses) or len(set(uses)) != len(uses):
            broken.append(f"turn {n} tool_use {uses} answered by {answered} in the next turn")
    return broken


def _final_turn_violations(turns: list[dict[str, Any]]) -> list[str]:
    first = None
    uses_tools = False
    for turn in reversed(turns):
        if turn["role"] == "assistant":
            first = turn
            uses_tools = uses_tools or any(b["type"] == "tool_use" for b in turn["content"])
        elif not any(b["type"] == "tool_result" for b in turn["content"]):
            break
    if first is not None and uses_tools and first["content"][0]["type"] not in THINKING:
        return ["thinking on, but the final assistant turn does not start with thinking"]
    return []


def opening_step_signed(history: Sequence[Item]) -> bool | None:
    """Whether the step that opens the final turn — the first model step
    calling tools after the log's last prompt (a user message, blank or
    not, that is not steering; the start of the log if there is none), with
    only text before it — carries a signed thinking block.

    ``None`` when Anthropic's assistant turn goes on from before that
    prompt (the step before it ended on tool results: a turn that failed
    after its tools ran, or a blank prompt right after them) or the user
    spoke again before that step.
    """
    prompts = [
        n for n, item in enumerate(history) if isinstance(item, UserMessage) and not item.steered
    ]
    at = prompts[-1] if prompts else -1
    where = {id(item): n for n, item in enumerate(history)}
    entries = repair_history(history)
    opening = next(
        (
            k
            for k, entry in enumerate(entries)
            if isinstance(entry, ModelEntry) and where[id(entry.output[0])] > at
        ),
        None,
    )
    if opening is None:
        return False
    previous = next((e for e in reversed(entries[:opening]) if isinstance(e, ModelEntry)), None)
    if isinstance(previous, ModelEntry) and previous.results:
        return None
    for entry in entries[opening:]:
        if isinstance(entry, UserEntry):
            return None
        if entry.calls:
            return any(isinstance(o, AssistantReasoning) and o.signature for o in entry.output)
    return False


def anthropic_thinking_dropped(history: Sequence[Item], body: dict[str, Any]) -> list[str]:
    """For a body asked to think: thinking is off although the step that
    opens the final turn has its signed reasoning in the log (and the body
    is no prefill, which must go without thinking)."""
    turns = body["messages"]
    if (body.get("thinking") or {}).get("type") == "enabled" or turns[-1]["role"] == "assistant":
        return []
    if opening_step_signed(history):
        return ["thinking turned off, but the step opening the final turn is signed"]
    return []


def _breakpoints(body: dict[str, Any]) -> int:
    count = sum("cache_control" in tool for tool in body.get("tools", ()))
    count += sum("cache_control" in block for block in body.get("system", ()))
    for turn in body["messages"]:
        count += sum("cache_control" in block for block in turn["content"])
    return count


def kimi_violations(body: dict[str, Any], *, thinking_model: bool = False) -> list[str]:
    """Chat completions' rules, with Moonshot's builtins allowed, and Kimi's
    own (see the module docstring)."""
    tools = body.get("tools", ())
    builtins = [t for t in tools if t["type"] == "builtin_function"]
    plain = {**body, "tools": [t for t in tools if t not in builtins]}
    if not plain["tools"]:
        del plain["tools"]
    messages = body["messages"]
    broken = [
        rule
        for rule in chat_violations(_without_builtin_calls(plain))
        if not rule.startswith("empty tools array") or not builtins
    ]
    for tool in builtins:
        if tool != {"type": "builtin_function", "function": {"name": tool["function"]["name"]}}:
            broken.append(f"builtin {tool} carries more than its name")
        if BUILTIN_NAME.fullmatch(tool["function"]["name"]) is None:
            broken.append(f"builtin name {tool['function']['name']!r} is not $<name>")
    for tool in tools:
        if tool["type"] == "function":
            name = tool["function"]["name"]
            broken += [
                f"{name}: {v}" for v in kimi_schema_violations(tool["function"]["parameters"])
            ]
    for n, message in enumerate(messages):
        if message.get("partial") and n != len(messages) - 1:
            broken.append(f"message {n} is partial but not last")
        if thinking_model and message["role"] == "assistant" and message.get("tool_calls"):
            if not message.get("reasoning_content"):
                broken.append(f"assistant message {n} calls tools without reasoning_content")
    return broken


def _without_builtin_calls(body: dict[str, Any]) -> dict[str, Any]:
    """``body`` with builtin names in calls swapped for valid plain names
    (chat completions' name rule does not know ``$``)."""
    messages = []
    for message in body["messages"]:
        calls = message.get("tool_calls")
        if calls:
            calls = [
                {**c, "function": {**c["function"], "name": c["function"]["name"].lstrip("$")}}
                if BUILTIN_NAME.fullmatch(c["function"]["name"])
                else c
                for c in calls
            ]
            message = {**message, "tool_calls": calls}
        messages.append(message)
    return {**body, "messages": messages}


def kimi_schema_violations(schema: Any) -> list[str]:
    """Why Moonshot would refuse ``schema`` as a tool's parameters."""
    if not isinstance(schema, dict):
        return [f"parameters are {type(schema).__name__}, not an object"]
    broken: list[str] = []
    if schema.get("type") != "object" and not any(k in schema for k in ("anyOf", "oneOf")):
        broken.append(f"root type is {schema.get('type')!r}, not 'object'")
    _kimi_node(schema, schema, "#", nested=False, broken=broken)
    return broken


def _kimi_node(
    node: dict[str, Any], root: dict[str, Any], at: str, *, nested: bool, broken: list[str]
) -> None:
    if nested and "type" not in node and not any(k in node for k in KIMI_COMBINATORS):
        broken.append(f"{at} has no type")
    if "type" in node and any(isinstance(node.get(k), list) for k in ("anyOf", "oneOf")):
        broken.append(f"{at} has a type beside anyOf/oneOf")
    properties, required = node.get("properties"), node.get("required")
    if isinstance(properties, dict) and isinstance(required, list):
        missing = [name for name in required if name not in properties]
        if missing:
            broken.append(f"{at} requires undeclared {missing}")
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/") and _acyclic_target(root, ref):
        broken.append(f"{at} keeps the local $ref {ref!r}")
    for key, child in _kimi_children(node):
        _kimi_node(child, root, f"{at}/{key}", nested=True, broken=broken)


def _kimi_children(node: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    out: list[tuple[str, dict[str, Any]]] = []
    for key in ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas"):
        mapping = node.get(key)
        if isinstance(mapping, dict):
            out += ((f"{key}/{k}", v) for k, v in mapping.items() if isinstance(v, dict))
    for key in ("additionalProperties", "items", "not", "if", "then", "else", "contains"):
        child = node.get(key)
        if isinstance(child, dict):
            out.append((key, child))
    for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
        children = node.get(key)
        if isinstance(children, list):
            out += ((f"{key}/{n}", c) for n, c in enumerate(children) if isinstance(c, dict))
    return out


def _acyclic_target(root: dict[str, Any], ref: str) -> bool:
    """Whether ``ref`` names a schema in ``root`` that never refers back to
    itself (so it could have been inlined)."""
    target: Any = root
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(target, dict) or part not in target:
            return False
        target = target[part]
    return isinstance(target, dict) and ref not in _refs(target, root, set())


def _refs(node: Any, root: dict[str, Any], seen: set[str]) -> set[str]:
    """Every local ``$ref`` reachable from ``node``, through the refs too."""
    if isinstance(node, list):
        return set().union(*(_refs(c, root, seen) for c in node)) if node else set()
    if not isinstance(node, dict):
        return set()
    found: set[str] = set()
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/") and ref not in seen:
        seen.add(ref)
        found.add(ref)
        target: Any = root
        for part in ref[2:].split("/"):
            target = target.get(part) if isinstance(target, dict) else None
        found |= _refs(target, root, seen)
    for child in node.values():
        found |= _refs(child, root, seen)
    return found


def gemini_violations(body: dict[str, Any]) -> list[str]:
    broken: list[str] = []
    declarations = [d for tool in body.get("tools", ()) for d in tool["functionDeclarations"]]
    if "tools" in body and not declarations:
        broken.append("empty functionDeclarations")
    broken += _gemini_names("tool", (d["name"] for d in declarations))
    contents = body["contents"]
    if not contents:
        broken.append("no contents")
    for n, content in enumerate(contents):
        expected = "user" if n % 2 == 0 else "model"
        if content["role"] != expected:
            broken.append(f"content {n} is {content['role']}, expected {expected}")
        if not content["parts"]:
            broken.append(f"content {n} has no parts")
        for part in content["parts"]:
            broken += _gemini_part(n, part)
        broken += _gemini_pairs(n, contents)
    return broken


def _gemini_part(n: int, part: dict[str, Any]) -> list[str]:
    broken: list[str] = []
    data = [key for key in PART_DATA if key in part]
    if len(data) != 1:
        broken.append(f"content {n}: a part with data {data}")
    if "text" in part and not part["text"].strip():
        broken.append(f"content {n}: a blank text part")
    if part.get("thought") and not part.get("thoughtSignature"):
        broken.append(f"content {n}: a thought part without its signature")
    if "thoughtSignature" in part and not part["thoughtSignature"]:
        broken.append(f"content {n}: an empty thoughtSignature")
    if "functionCall" in part:
        broken += _gemini_names(f"content {n} call", [part["functionCall"]["name"]])
        args = part["functionCall"].get("args", {})
        if isinstance(args, msgspec.Raw):
            args = msgspec.json.decode(bytes(args))
        if not isinstance(args, dict):
            broken.append(f"content {n}: functionCall args is not an object")
    if "functionResponse" in part and not isinstance(part["functionResponse"]["response"], dict):
        broken.append(f"content {n}: functionResponse response is not an object")
    return broken


def _gemini_pairs(n: int, contents: list[dict[str, Any]]) -> list[str]:
    """The calls of content ``n`` and the responses of content ``n + 1``."""
    parts = contents[n]["parts"]
    called = [p["functionCall"]["name"] for p in parts if "functionCall" in p]
    answered = [p["functionResponse"]["name"] for p in parts if "functionResponse" in p]
    if answered:
        before = contents[n - 1]["parts"] if n else []
        asked = [p["functionCall"]["name"] for p in before if "functionCall" in p]
        leading = parts[: len(answered)]
        if answered != asked or not all("functionResponse" in p for p in leading):
            return [f"content {n} answers {answered}, the content before called {asked}"]
    if called:
        following = contents[n + 1]["parts"] if n + 1 < len(contents) else []
        given = [p["functionResponse"]["name"] for p in following if "functionResponse" in p]
        if given != called:
            return [f"content {n} calls {called}, answered by {given}"]
    return []


def _gemini_names(where: str, names: Iterable[str]) -> list[str]:
    return [
        f"{where} name {name!r} is not {GEMINI_NAME.pattern}"
        for name in names
        if GEMINI_NAME.fullmatch(name) is None
    ]


def foreign_signatures(fmt: str, body: dict[str, Any], anthropic: set[str]) -> list[str]:
    """Signatures sent to the wrong provider: an Anthropic thinking signature
    (one of ``anthropic``) as a Gemini ``thoughtSignature``, or anything
    else on an Anthropic thinking block."""
    if fmt == "gemini":
        return [
            f"Anthropic signature {part['thoughtSignature']!r} sent to Gemini"
            for content in body["contents"]
            for part in content["parts"]
            if part.get("thoughtSignature") in anthropic
        ]
    if fmt == "messages":
        return [
            f"signature {block['signature']!r} of another provider sent to Anthropic"
            for turn in body["messages"]
            for block in turn["content"]
            if block["type"] == "thinking"
            and block.get("signature")
            and block["signature"] not in anthropic
        ]
    return []


def violations(fmt: str, body: dict[str, Any]) -> list[str]:
    if fmt == "chat_completions":
        return chat_violations(body)
    if fmt == "responses":
        return responses_violations(body)
    if fmt == "gemini":
        return gemini_violations(body)
    return anthropic_violations(body)
