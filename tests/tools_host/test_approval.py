"""The approval table, every policy and effect."""

from __future__ import annotations

from typing import get_args

import pytest

from kun.contracts.threads import ApprovalPolicy
from kun.tools import ToolEffect, can_prompt, decide

EFFECTS: tuple[ToolEffect, ...] = ("read", "write", "exec", "interact", "state")
TABLE: dict[ApprovalPolicy, tuple[str, ...]] = {
    #              read     write    exec   interact state
    "never":      ("allow", "deny",  "deny", "allow", "allow"),
    "on-request": ("allow", "allow", "ask",  "allow", "allow"),
    "untrusted":  ("allow", "ask",   "ask",  "allow", "ask"),
    "always":     ("ask",   "ask",   "ask",  "allow", "ask"),
    "auto":       ("allow", "ask",   "ask",  "allow", "allow"),
    "full-auto":  ("allow", "allow", "allow", "allow", "allow"),
}  # fmt: skip

CASES = [
    (policy, effect, TABLE[policy][EFFECTS.index(effect)])
    for policy in get_args(ApprovalPolicy)
    for effect in get_args(ToolEffect)
]


def test_the_table_covers_every_policy_and_effect() -> None:
    assert len(CASES) == len(get_args(ApprovalPolicy)) * len(get_args(ToolEffect)) == 30


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
