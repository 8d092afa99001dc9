"""Which open turns are suspended (waiting only for the user) and which are
orphans: the table of cases a stop can leave a turn in."""

from __future__ import annotations

from kun.contracts import events as ev
from kun.domain.reduce import replay
from kun.domain.suspension import find_suspension, suspended_turns
from kun.testing.logbuilder import LogBuilder


def _builder() -> LogBuilder:
    b = LogBuilder("t_wait")
    b.create(workspace="/w")
    b.start_turn("fix it")
    return b


def _suspension(b: LogBuilder):  # type: ignore[no-untyped-def]
    state = replay(b.events)
    turn = state.turns[-1]
    return find_suspension(state, turn)


def test_a_pending_approval_of_a_call_not_started_is_suspended_with_the_calls_after_it() -> None:
    b = _builder()
    first = b.tool_call("read_file", {"path": "a"})
    second = b.tool_call("write_file", {"path": "a", "content": "x"})
    third = b.tool_call("bash", {"command": "ls"})
    b.start_tool(first)
    b.finish_tool(first, "old")
    approval = b.request_approval(second, "write a")
    found = _suspension(b)
    assert found is not None
    assert (found.kind, found.pending_id, found.call.call_id) == (
        "approval",
        approval,
        second.call_id,
    )
    assert [c.call_id for c in found.rest] == [third.call_id]


def test_a_question_asked_by_the_question_tool_is_suspended() -> None:
    b = _builder()
    call = b.tool_call("request_user_input", {"question": "which?"})
    b.start_tool(call)
    request = b.ask_user("which?", ("a", "b"))
    found = _suspension(b)
    assert found is not None
    assert (found.kind, found.pending_id, found.call.call_id, found.rest) == (
        "question",
        request,
        call.call_id,
        (),
    )


def test_a_question_asked_from_inside_another_tool_is_an_orphan() -> None:
    b = _builder()
    call = b.tool_call("bash", {"command": "deploy"})
    b.start_tool(call)
    b.ask_user("really?")
    assert _suspension(b) is None


def test_a_running_tool_beside_the_approval_makes_an_orphan() -> None:
    b = _builder()
    first = b.tool_call("bash", {"command": "sleep 9"})
    second = b.tool_call("write_file", {"path": "a", "content": "x"})
    b.start_tool(first)
    b.request_approval(second, "write a")
    assert _suspension(b) is None


def test_no_gate_an_answered_gate_or_a_settled_turn_is_not_suspended() -> None:
    b = _builder()
    call = b.tool_call("write_file", {"path": "a", "content": "x"})
    assert _suspension(b) is None
    approval = b.request_approval(call, "write a")
    assert _suspension(b) is not None
    b.resolve_approval(approval, "approved")
    assert _suspension(b) is None
    b.start_tool(call)
    b.finish_tool(call, "wrote a")
    b.complete()
    assert suspended_turns(replay(b.events)) == {}


def test_an_approval_of_a_call_from_an_earlier_step_is_not_resumable() -> None:
    b = _builder()
    old = b.tool_call("write_file", {"path": "a", "content": "x"})
    b.start_tool(old)
    b.finish_tool(old, "done")
    b.assistant_text(["next"])
    b.request_approval(old, "write a again")
    assert _suspension(b) is None


def test_a_turn_that_came_with_an_import_is_an_orphan_not_suspended() -> None:
    """Its approval was asked on another machine: re-arming it here would
    run a call nobody here asked for. A turn started after the import
    waits as usual."""
    b = _builder()
    call = b.tool_call("bash", {"command": "deploy"})
    b.request_approval(call, "run deploy")
    assert _suspension(b) is not None
    b.emit(ev.ThreadImported)
    assert suspended_turns(replay(b.events)) == {}
    b.abort()
    b.start_turn("again")
    later = b.tool_call("bash", {"command": "ls"})
    b.request_approval(later, "run ls")
    assert _suspension(b) is not None
