"""Plan mode's pure rules (SPEC §7.5): the tool filter as a table, the
clarifying-question test, the checklist as todos, the stale plan context."""

from __future__ import annotations

import msgspec
import pytest

from kun.contracts.items import Plan
from kun.contracts.model import ToolSpec
from kun.contracts.threads import ThreadSettings, Todo
from kun.domain.plan_mode import (
    TITLE_CHARS,
    is_clarifying_question,
    plan_context,
    plan_mode_tools,
    plan_title,
    plan_todos,
    without_plan_tool,
)
from kun.domain.recovery import RecoveryState, ResolveSoftRequired, RoundFacts, Stop, decide
from kun.domain.state import ThreadState, TurnState

EFFECTS: dict[str, str | None] = {
    "read_file": "read",
    "list_dir": "read",
    "glob": "read",
    "grep": "read",
    "repo_map": "read",
    "write_file": "write",
    "edit_file": "write",
    "bash": "exec",
    "request_user_input": "interact",
    "todo_write": "state",
    "get_goal": "state",
    "create_plan": "state",
    "web_search": None,
    "web_fetch": None,
    "generate_image": "exec",
    "mystery": None,
}
SPECS = tuple(
    ToolSpec(name=name, description="", parameters=msgspec.Raw(b"{}")) for name in EFFECTS
)

# tool, allowed before the turn has a plan, allowed after
TABLE = [
    ("read_file", True, True),
    ("list_dir", True, True),
    ("glob", True, True),
    ("grep", True, True),
    ("repo_map", True, True),
    ("web_search", True, True),
    ("web_fetch", True, True),
    ("request_user_input", True, True),
    ("generate_image", True, True),
    ("create_plan", True, False),
    ("write_file", False, False),
    ("edit_file", False, False),
    ("bash", False, False),
    ("todo_write", False, False),
    ("get_goal", False, False),
    ("mystery", False, False),
]


@pytest.mark.parametrize(("name", "before", "after"), TABLE)
def test_the_plan_mode_filter(name: str, before: bool, after: bool) -> None:
    names_before = {s.name for s in plan_mode_tools(SPECS, EFFECTS, plan_exists=False)}
    names_after = {s.name for s in plan_mode_tools(SPECS, EFFECTS, plan_exists=True)}
    assert (name in names_before, name in names_after) == (before, after)


def test_the_filter_keeps_the_catalogue_order_and_covers_every_tool() -> None:
    assert {row[0] for row in TABLE} == set(EFFECTS)
    kept = plan_mode_tools(SPECS, EFFECTS, plan_exists=False)
    assert list(kept) == [s for s in SPECS if s in kept]


def test_outside_plan_mode_only_create_plan_is_withheld() -> None:
    assert [s.name for s in without_plan_tool(SPECS)] == [n for n in EFFECTS if n != "create_plan"]


@pytest.mark.parametrize(
    ("text", "question"),
    [
        ("Should the cache live in Redis or in memory?", True),
        ("Which database do you want: Postgres or SQLite?", True),
        ("I looked at the code.\nDo you prefer option A (fast) or B (safe)?", True),
        ("你想用哪个数据库？", True),  # noqa: RUF001
        ("缓存放在内存里还是 Redis 里?", True),
        ("有两种做法，请选择：A 还是 B？", True),  # noqa: RUF001
        ("1. Add the endpoint\n2. Write tests\n\nDoes this look right?", False),
        ("## Plan\n- [ ] step one\n\nWhich one first, A or B?", False),
        (
            "Which file holds the config? It is config.py.\nI will add the flag.\nThen tests.",
            False,
        ),
        ("The plan: add a flag, then tests. Ok?", False),
        ("这样可以吗？", False),  # noqa: RUF001
    ],
)
def test_a_clarifying_question(text: str, question: bool) -> None:
    assert is_clarifying_question(text) is question


def test_the_checklist_becomes_todos() -> None:
    markdown = (
        "## Steps\n- [ ] add the flag\n- [x] read the code\n* [X] agree the name\n"
        "1. [ ] write tests\n- not a step\n  - [ ]   indented step  \n"
    )
    assert plan_todos(markdown) == (
        Todo(content="add the flag", status="pending"),
        Todo(content="read the code", status="completed"),
        Todo(content="agree the name", status="completed"),
        Todo(content="write tests", status="pending"),
        Todo(content="indented step", status="pending"),
    )
    assert plan_todos("no checklist") == ()


def _state(workspace: str, *plans: Plan, hidden: bool = False) -> ThreadState:
    turn = TurnState(
        turn_id="turn_1",
        status="completed",
        started_seq=1,
        started_at=0,
        items=plans,
        hidden_by=9 if hidden else None,
    )
    return ThreadState(thread_id="thr", settings=ThreadSettings(workspace=workspace), turns=(turn,))


def test_the_plan_context_is_the_latest_plan_of_the_same_workspace() -> None:
    old = Plan(id="plan_1", markdown="old", workspace="/ws")
    new = Plan(id="plan_2", markdown="new", workspace="/ws")
    context = plan_context(_state("/ws", old, new))
    assert context is not None and context.plan == new and context.workspace == "/ws"
    assert context.turn_id == "turn_1"


def test_a_plan_for_another_workspace_is_stale() -> None:
    forked = _state("/elsewhere", Plan(id="plan_1", markdown="p", workspace="/ws"))
    assert plan_context(forked) is None


def test_a_plan_without_a_workspace_is_the_threads_and_a_hidden_one_none() -> None:
    assert plan_context(_state("/ws", Plan(id="plan_1", markdown="p"))) is not None
    assert plan_context(_state("/ws", Plan(id="plan_1", markdown="p"), hidden=True)) is None
    assert plan_context(_state("/ws")) is None


def test_the_decision_tree_stops_on_a_question_and_materialises_prose() -> None:
    def decision(text: str) -> object:
        facts = RoundFacts(text=text, soft_required_tool="create_plan")
        return decide(facts, RecoveryState.initial())[0]

    assert decision("Redis or memory, which one?") == Stop()
    assert decision("1. Add it\n2. Test it\nDoes this look right?") == ResolveSoftRequired(
        tool="create_plan"
    )


@pytest.mark.parametrize(
    ("prose", "title"),
    [
        ("1. Add the flag\n2. Write tests\n\nDoes this look right?", "Add the flag"),
        ("Some context first.\n\n## Plan: **add** a `--flag` ##\n- [ ] x", "Plan: add a `--flag`"),
        ("Here is my plan:\n- a\n- b", "Here is my plan"),
        ("\n  \n- [ ] **Refactor** run_turn_x in loop.py", "Refactor run_turn_x in loop.py"),
        ("> _Quoted_ idea", "Quoted idea"),
        ("#\n\n计划\uff1a添加标志", "计划\uff1a添加标志"),
        ("方案\uff1a", "方案"),
        ("## \n**\n---\nThe steps", "The steps"),
        (" ".join(["word"] * 40), " ".join(["word"] * 15) + "…"),
        ("x" * 200, "x" * 79 + "…"),
        ("**\n---", "Plan"),
    ],
)
def test_a_prose_plan_is_titled_from_its_first_heading_or_line(prose: str, title: str) -> None:
    assert plan_title(prose) == title
    assert len(plan_title(prose)) <= TITLE_CHARS
