"""Each provider's hard rules for a request body, as checks.

Every function returns the list of broken rules (empty when the body is
acceptable), so a failing test says which rule and where.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

THINKING = ("thinking", "redacted_thinking")


def chat_violations(body: dict[str, Any]) -> list[str]:
    broken: list[str] = []
    if body.get("tools") == []:
        broken.append("empty tools array")
    messages = body["messages"]
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
    breakpoints = _breakpoints(body)
    if breakpoints > 4:
        broken.append(f"{breakpoints} cache_control breakpoints")
    thinking = body.get("thinking") or {}
    thinking_on = thinking.get("type") == "enabled"
    for n, turn in enumerate(turns):
        broken += _turn_violations(n, turn, turns, thinking_on=thinking_on)
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


def _breakpoints(body: dict[str, Any]) -> int:
    count = sum("cache_control" in tool for tool in body.get("tools", ()))
    count += sum("cache_control" in block for block in body.get("system", ()))
    for turn in body["messages"]:
        count += sum("cache_control" in block for block in turn["content"])
    return count


def violations(fmt: str, body: dict[str, Any]) -> list[str]:
    if fmt == "chat_completions":
        return chat_violations(body)
    if fmt == "responses":
        return responses_violations(body)
    return anthropic_violations(body)
