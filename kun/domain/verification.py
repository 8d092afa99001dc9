"""The verification suggestion (SPEC §7.6): a soft note asking the model to
run the project's checks when source code changed after the last check.

Only code counts, so writing docs, HTML or notes never draws the note: a
change is a ``write_file`` / ``edit_file`` call with a result that is not
an error (no result: it may not have run) whose path matches
:data:`SOURCE_PATH`. A plan artefact never counts (``create_plan`` is not a
file tool, so its output is outside the scan by construction). A
verification is a ``verify_changes`` call, or a ``bash`` call whose
command runs a test runner, linter or type checker (:data:`CHECK_COMMAND`);
it counts whatever its outcome, because the model has then seen the result.

Pure: :func:`needs_verification` reads items, nothing else.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import msgspec

from kun.contracts.items import Item, ToolCall, ToolResult

__all__ = [
    "CHECK_COMMAND",
    "SOURCE_PATH",
    "VERIFICATION_SUGGESTION",
    "is_check_command",
    "needs_verification",
]

SOURCE_PATH = re.compile(r"\.[cm]?[jt]sx?$|\.py$", re.IGNORECASE)
"""JavaScript/TypeScript (``.js .jsx .ts .tsx .mjs .cjs .mts .cts``) and Python."""

CHECK_COMMAND = re.compile(
    r"""(?:^|[\s;&|(`/])(?:
        pytest | py\.test | tox | nox | ruff | mypy | pyright | flake8 | pylint | black\s+--check
      | unittest
      | tsc | eslint | vitest | jest | mocha | biome | prettier\s+--check
      | (?:npm|pnpm|yarn|bun)\s+(?:run\s+)?(?:test|lint|check|typecheck|type-check|build)
      | npx\s+(?:tsc|eslint|vitest|jest)
      | cargo\s+(?:test|check|clippy)
      | go\s+(?:test|vet)
      | make\s+(?:check|test|lint)
    )(?=$|[\s;&|)`])""",
    re.VERBOSE,
)
"""Commands that verify changes: test runners, linters and type checkers of
the languages :data:`SOURCE_PATH` covers, and the usual wrappers."""

VERIFICATION_SUGGESTION = (
    "Source files changed since the last check. Consider running the project's "
    "tests, linter or type checker to verify the changes; skip this if it does "
    "not apply."
)

_FILE_TOOLS = frozenset({"write_file", "edit_file"})
_CHECK_TOOL = "verify_changes"
_RELEVANT = _FILE_TOOLS | {_CHECK_TOOL, "bash"}


def is_check_command(command: str) -> bool:
    """Whether a shell command runs a check (:data:`CHECK_COMMAND`)."""
    return CHECK_COMMAND.search(command) is not None


def needs_verification(items: Sequence[Item]) -> bool:
    """Whether the last source change comes after the last verification.
    Read from the end, stopping at the first of the two: a step's cost
    does not grow with the thread's age."""
    succeeded: set[str] = set()
    for item in reversed(items):
        if isinstance(item, ToolResult):
            if not item.is_error and item.status != "failed":
                succeeded.add(item.call_id)
        elif isinstance(item, ToolCall) and item.name in _RELEVANT:
            if _is_check(item):
                return False
            if item.call_id in succeeded and _is_source_change(item):
                return True
    return False


def _arguments(call: ToolCall) -> dict[str, object]:
    try:
        value = msgspec.json.decode(call.arguments)
    except msgspec.DecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def _is_source_change(call: ToolCall) -> bool:
    if call.name not in _FILE_TOOLS:
        return False
    path = _arguments(call).get("path")
    return isinstance(path, str) and SOURCE_PATH.search(path) is not None


def _is_check(call: ToolCall) -> bool:
    if call.name == _CHECK_TOOL:
        return True
    if call.name != "bash":
        return False
    command = _arguments(call).get("command")
    return isinstance(command, str) and is_check_command(command)
