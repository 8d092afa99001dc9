"""Approval policies: whether a tool call runs, waits for the user's
approval, or is refused — decided from the thread's policy and the tool's
effect alone. Pure: no IO, no state.

=============  ======  ======  ======  ========  ======  ========
policy         read    write   exec    interact  state   delegate
=============  ======  ======  ======  ========  ======  ========
``never``      allow   deny    deny    allow     allow   allow
``on-request`` allow   allow   ask     allow     allow   allow
``untrusted``  allow   ask     ask     allow     ask     allow
``always``     ask     ask     ask     allow     ask     allow
``auto``       allow   ask     ask     allow     allow   allow
``full-auto``  allow   allow   allow   allow     allow   allow
=============  ======  ======  ======  ========  ======  ========

* ``never`` — never ask. Reading, the thread's own state (todos) and
  questions to the user run; anything that would need approval — writing
  files, running commands — is denied. For unattended runs where nobody can
  answer.
* ``on-request`` (the default) — reading, todos and file writes run (file
  tools are confined to the workspace, so a write cannot reach outside it);
  running a command asks.
* ``untrusted`` — only reading runs without asking; everything with a side
  effect asks: file writes, commands, todo changes.
* ``always`` — every call asks, reads included.
* ``auto`` — reading and todos run; file writes and commands ask.
* ``full-auto`` — everything runs without asking, commands included.
  **Dangerous**: the model can run any command as the user (file tools stay
  confined to the workspace; ``bash`` does not). Opt-in only, never a
  default: for an unattended run (CI, a script, a container) that must run
  commands.

Where a policy asks, a call the user approved "always for this thread"
(the thread's ``always_allow``, :mod:`kun.tools.allow`) runs without asking;
where it denies, an allow rule changes nothing, so ``never`` stays read-only.

Effects (:data:`~kun.tools.base.ToolEffect`): ``read`` read_file, list_dir,
glob, grep; ``write`` write_file, edit_file; ``exec`` bash; ``interact``
request_user_input; ``state`` todo_list, todo_write.

``delegate`` (``delegate_task``) is never gated either: handing a task to
a sub-agent changes nothing by itself, and every call the sub-agent makes
is judged by its own policy and the parent's (:mod:`kun.runtime.delegation`).

``interact`` is never gated: the call *is* a question to the user, and asking
approval for it would be a second prompt to reach the first. ``deny`` means
the call does not run and the model gets an ``is_error`` result saying the
policy refused it. Only execution is gated; listing the catalogue never asks.
"""

from __future__ import annotations

from typing import Literal

from kun.contracts.threads import ApprovalPolicy
from kun.tools.base import ToolEffect

Decision = Literal["allow", "ask", "deny"]

_TABLE: dict[ApprovalPolicy, dict[ToolEffect, Decision]] = {
    "never": {
        "read": "allow", "write": "deny", "exec": "deny", "interact": "allow", "state": "allow",
        "delegate": "allow",
    },
    "on-request": {
        "read": "allow", "write": "allow", "exec": "ask", "interact": "allow", "state": "allow",
        "delegate": "allow",
    },
    "untrusted": {
        "read": "allow", "write": "ask", "exec": "ask", "interact": "allow", "state": "ask",
        "delegate": "allow",
    },
    "always": {
        "read": "ask", "write": "ask", "exec": "ask", "interact": "allow", "state": "ask",
        "delegate": "allow",
    },
    "auto": {
        "read": "allow", "write": "ask", "exec": "ask", "interact": "allow", "state": "allow",
        "delegate": "allow",
    },
    "full-auto": {
        "read": "allow", "write": "allow", "exec": "allow", "interact": "allow", "state": "allow",
        "delegate": "allow",
    },
}  # fmt: skip


def decide(policy: ApprovalPolicy, effect: ToolEffect) -> Decision:
    """What happens to a call with ``effect`` under ``policy``."""
    return _TABLE[policy][effect]


def can_prompt(policy: ApprovalPolicy) -> bool:
    """Whether a call under ``policy`` may block waiting for the user: every
    policy but ``never``, which denies instead of asking."""
    return policy != "never"


_RANK: dict[Decision, int] = {"deny": 0, "ask": 1, "allow": 2}


def strictest(*decisions: Decision) -> Decision:
    """The strictest of ``decisions``: ``deny`` over ``ask`` over ``allow``
    (a sub-agent's call runs only where its policy and every policy above
    it let it)."""
    return min(decisions, key=_RANK.__getitem__)
