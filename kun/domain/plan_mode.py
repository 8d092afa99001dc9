"""Plan mode (SPEC §7.5): "investigate, then propose a plan, change nothing".

A plan-mode turn (``turn_started.plan_mode``) narrows the tool set to one
path: look (read-only tools, web look-ups), ask (question tools), produce
(an allow-list of generation tools) and write the plan (``create_plan``,
withdrawn once this turn has one). Change tools never come back, ``bash``
included: it runs anything, so it is not read-only whatever the policy
says. A tool declares itself read-only through its effect (``read``), so a
new inspection tool joins without a name list; the effects are passed in,
keeping this module free of the tool layer.

``create_plan`` is soft-required: a plan-mode reply without tools and
without a plan is a clarifying question (:func:`is_clarifying_question`,
the turn stops for the user's answer) or the plan in prose (the loop
materialises it with a synthetic ``create_plan`` call).

The *plan context* is the latest ``plan`` item of the visible turns and the
workspace it was written for. A fork copies it with the log; if the fork
runs in another workspace the plan talks about other files, so it is stale
and ignored (:func:`plan_context`).

Pure: no IO.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import msgspec

from kun.contracts.items import Item, Plan
from kun.contracts.model import ToolSpec
from kun.contracts.threads import Todo
from kun.domain.state import ThreadState, TurnState

__all__ = [
    "GENERATION_TOOLS",
    "MATERIALIZED_SUMMARY",
    "PLAN_MODE_INSTRUCTION",
    "PLAN_TOOL",
    "WEB_TOOLS",
    "PlanContext",
    "has_plan",
    "is_clarifying_question",
    "plan_context",
    "plan_mode_tools",
    "plan_title",
    "plan_todos",
    "without_plan_tool",
]

PLAN_TOOL = "create_plan"
WEB_TOOLS = frozenset({"web_search", "web_fetch"})
"""Look-ups outside the workspace: they change nothing of the user's."""
GENERATION_TOOLS = frozenset({"generate_image"})
"""Tools that produce an artefact for the plan without touching the workspace."""
PLAN_EFFECTS = frozenset({"read", "interact"})
"""Read-only tools and question tools (asking is how a plan gets clear)."""
MATERIALIZED_SUMMARY = "Materialized assistant plan text into the required plan."
"""What older logs wrote as the summary of a plan materialised from the
model's prose; such a plan now carries ``from_reply`` and a real title
(:func:`plan_title`)."""
TITLE_CHARS = 80

PLAN_MODE_INSTRUCTION = (
    "[kun] Plan mode: do not change anything. Investigate with the read-only tools, ask "
    "the user if a decision is theirs, then call create_plan once with the whole plan in "
    "markdown: ## sections, and the steps as a checklist (- [ ] step)."
)


def plan_mode_tools(
    specs: Sequence[ToolSpec], effects: Mapping[str, str | None], *, plan_exists: bool
) -> tuple[ToolSpec, ...]:
    """The tools of a plan-mode step, in ``specs``' order. ``effects``
    maps a tool's name to its declared effect (a missing name has none)."""
    kept = []
    for spec in specs:
        name = spec.name
        if name == PLAN_TOOL:
            allowed = not plan_exists
        else:
            allowed = (
                effects.get(name) in PLAN_EFFECTS or name in WEB_TOOLS or name in GENERATION_TOOLS
            )
        if allowed:
            kept.append(spec)
    return tuple(kept)


def without_plan_tool(specs: Sequence[ToolSpec]) -> tuple[ToolSpec, ...]:
    """The tools of a step outside plan mode: ``create_plan`` is what plan
    mode produces, so an ordinary turn does not get it."""
    return tuple(s for s in specs if s.name != PLAN_TOOL)


def has_plan(items: Sequence[Item]) -> bool:
    return any(isinstance(i, Plan) for i in items)


_HEADING = re.compile(r"^\s{0,3}#{1,6}\s", re.MULTILINE)
_CHOICE_CUE = re.compile(
    r"\b(which|or|either|prefer|choose|option)\b|哪|还是|请选择|选择|或者", re.IGNORECASE
)


def is_clarifying_question(text: str) -> bool:
    """Whether a plan-mode reply asks the user to decide rather than
    proposing a plan: no markdown heading (a plan has ``##`` sections), a
    question mark in its last two lines, and a choice cue. The cue is what
    keeps a plan ending in "Does this look right?" a plan."""
    if _HEADING.search(text):
        return False
    lines = [line for line in text.strip().splitlines() if line.strip()]
    tail = "\n".join(lines[-2:])
    if "?" not in tail and "\uff1f" not in tail:
        return False
    return bool(_CHOICE_CUE.search(tail))


_CHECKBOX = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+\[([ xX])\]\s+(.+?)\s*$", re.MULTILINE)


def plan_todos(markdown: str) -> tuple[Todo, ...]:
    """The plan's checklist as todos: ``- [ ]`` pending, ``- [x]`` completed."""
    return tuple(
        Todo(content=content, status="pending" if mark == " " else "completed")
        for mark, content in _CHECKBOX.findall(markdown)
    )


_TITLE_HEADING = re.compile(r" {0,3}#{1,6}(?:[ \t]+(.*?))?[ \t]*#*[ \t]*$")
_LINE_MARKUP = re.compile(r"^(?:#{1,6}(?:\s+|$)|>\s*|[-*+]\s+|\d+[.)]\s+|\[[ xX]\]\s+)+")
_EMPHASIS = re.compile(r"(?<!\w)(\*\*|__|\*|_)(\S(?:.*?\S)?)\1(?!\w)")


def plan_title(text: str) -> str:
    """A one-line title for a plan the model wrote as prose: its first
    markdown heading, else its first line with a letter or digit, without
    list, quote and emphasis markup or a closing colon, cut at a word to
    :data:`TITLE_CHARS`. What the user sees where a ``create_plan`` call
    would have given its ``summary``."""
    lines = text.splitlines()
    headings = [m.group(1) for m in map(_TITLE_HEADING.match, lines) if m and m.group(1)]
    for raw in [*headings, *lines]:
        line = _EMPHASIS.sub(r"\2", _LINE_MARKUP.sub("", raw.strip()))
        line = " ".join(line.split()).rstrip(":\uff1a").strip()
        if any(c.isalnum() for c in line):
            return _cut_title(line)
    return "Plan"


def _cut_title(line: str) -> str:
    if len(line) <= TITLE_CHARS:
        return line
    cut = line[: TITLE_CHARS - 1]
    return (cut.rsplit(" ", 1)[0] if " " in cut else cut).rstrip(" ,;:") + "…"


class PlanContext(msgspec.Struct, frozen=True, kw_only=True):
    """The thread's current plan: the latest ``plan`` item, the turn that
    wrote it, and the workspace it was written for."""

    plan: Plan
    turn_id: str
    workspace: str


def plan_context(state: ThreadState) -> PlanContext | None:
    """The latest plan of the visible turns, or ``None`` when there is none
    or it was written for another workspace than the thread's (a fork moved
    elsewhere). A plan recorded before plans named their workspace is taken
    as the thread's."""
    workspace = state.settings.workspace
    for turn in reversed(state.visible_turns):
        plan = _last_plan(turn)
        if plan is not None:
            if plan.workspace and plan.workspace != workspace:
                return None
            return PlanContext(plan=plan, turn_id=turn.turn_id, workspace=workspace)
    return None


def _last_plan(turn: TurnState) -> Plan | None:
    for item in reversed(turn.items):
        if isinstance(item, Plan):
            return item
    return None
