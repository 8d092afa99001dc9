"""The approval table, every policy and effect."""

from __future__ import annotations

from typing import get_args

import pytest

from kun.contracts.threads import ApprovalPolicy
from kun.tools import ToolEffect, can_prompt, decide
from kun.tools.approval import strictest

EFFECTS: tuple[ToolEffect, ...] = ("read", "write", "exec", "interact", "state", "delegate")
TABLE: dict[ApprovalPolicy, tuple[str, ...]] = {
    #              read     write    exec   interact state    delegate
    "never":      ("allow", "deny",  "deny", "allow", "allow", "allow"),
    "on-request": ("allow", "allow", "ask",  "allow", "allow", "allow"),
    "untrusted":  ("allow", "ask",   "ask",  "allow", "ask",   "allow"),
    "always":     ("ask",   "ask",   "ask",  "allow", "ask",   "allow"),
    "auto":       ("allow", "ask",   "ask",  "allow", "allow", "allow"),
    "full-auto":  ("allow", "allow", "allow", "allow", "allow", "allow"),
}  # fmt: skip

CASES = [
    (policy, effect, TABLE[policy][EFFECTS.index(effect)])
    for policy in get_args(ApprovalPolicy)
    for effect in get_args(ToolEffect)
]


def test_the_table_covers_every_policy_and_effect() -> None:
    assert len(CASES) == len(get_args(ApprovalPolicy)) * len(get_args(ToolEffect)) == 36


@pytest.mark.parametrize(("policy", "effect", "expected"), CASES)
def test_decide(policy: ApprovalPolicy, effect: ToolEffect, expected: str) -> None:
    assert decide(policy, effect) == expected


@pytest.mark.parametrize("policy", get_args(ApprovalPolicy))
def test_can_prompt_is_false_only_for_never(policy: ApprovalPolicy) -> None:
    assert can_prompt(policy) is (policy != "never")
    if not can_prompt(policy):
        assert all(decide(policy, e) != "ask" for e in get_args(ToolEffect))


def test_reads_never_denied_and_interact_never_gated() -> None:
    for policy in get_args(ApprovalPolicy):
        assert decide(policy, "read") != "deny"
        assert decide(policy, "interact") == "allow"


@pytest.mark.parametrize("a", get_args(ApprovalPolicy))
@pytest.mark.parametrize("b", get_args(ApprovalPolicy))
def test_strictest_never_allows_what_either_policy_would_not(
    a: ApprovalPolicy, b: ApprovalPolicy
) -> None:
    """A sub-agent under policy ``a`` below a parent under ``b``."""
    rank = {"deny": 0, "ask": 1, "allow": 2}
    for effect in get_args(ToolEffect):
        both = strictest(decide(a, effect), decide(b, effect))
        assert rank[both] == min(rank[decide(a, effect)], rank[decide(b, effect)])
        assert both in (decide(a, effect), decide(b, effect))
