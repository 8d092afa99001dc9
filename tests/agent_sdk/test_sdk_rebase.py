"""Resume or rebase, as a table over thread histories; the rebase prompt and
its 48 KB transcript cap at the edge."""

from __future__ import annotations

from collections.abc import Callable

import msgspec
import pytest

from kun.contracts import events as ev
from kun.contracts.items import AssistantText, Compaction, ToolCall, ToolResult, UserMessage
from kun.domain.delegated import resume_or_rebase
from kun.domain.reduce import replay
from kun.domain.state import ThreadState
from kun.model.delegated import ENGINE
from kun.runtime.agent_sdk.rebase import (
    CUT_MARK,
    MAX_TRANSCRIPT_BYTES,
    cap_transcript,
    compose_prompt,
    history_transcript,
    prior_history,
    request_text,
)
from kun.testing.golden_threads import agent_sdk_turns
from kun.testing.logbuilder import LogBuilder

WS = "/work/ws"
SESSION = "sess-1"


def checkpoint(
    b: LogBuilder, *, engine: str = ENGINE, provider: str = "claude", ws: str = WS
) -> None:
    b.emit(
        ev.DelegatedCheckpoint,
        turn_id=b.turn_id,
        engine=engine,
        session_id=SESSION,
        provider=provider,
        workspace=ws,
    )


def delegated_turn(b: LogBuilder, text: str = "do it", **checkpoint_fields: str) -> str:
    turn_id = b.start_turn(text, provider="claude")
    b.item(AssistantText(id=b.next_id("txt"), text="done"))
    checkpoint(b, **checkpoint_fields)
    b.complete("end_turn")
    return turn_id


def nothing(b: LogBuilder) -> None:
    return None


def native_turn(b: LogBuilder) -> None:
    b.start_turn("via deepseek", provider="deepseek")
    b.complete()


def compaction(b: LogBuilder) -> None:
    b.start_turn(None)
    b.item(Compaction(id=b.next_id("cmp"), summary="so far"))
    b.complete("compacted")


def rewind_it(b: LogBuilder) -> None:
    first = b.events[1].turn_id
    assert first is not None
    b.rewind(first)


def rewind_and_undo(b: LogBuilder) -> None:
    b.start_turn("again", provider="claude")
    b.complete()
    seq = b.rewind(b.events[-3].turn_id or "")
    b.undo_rewind(seq)


def fork(b: LogBuilder) -> None:
    b.emit(ev.ThreadForked, source_thread_id="thr_src", source_seq=b.seq)


def imported(b: LogBuilder) -> None:
    b.emit(ev.ThreadImported)


def cancelled_while_queued(b: LogBuilder) -> None:
    b.emit(
        ev.TurnQueued,
        turn_id="turn_q",
        message=UserMessage(id="msg_q", text="later"),
    )
    b.emit(ev.TurnAborted, turn_id="turn_q", reason="cancelled")


def failed_after_commit(b: LogBuilder) -> None:
    b.start_turn("x", provider="claude")
    checkpoint(b)
    b.fail("agent_sdk_error", "broke after the checkpoint")


def settings_changed(b: LogBuilder) -> None:
    b.update(title="renamed", model="claude-opus-4-1")


CASES: list[tuple[str, Callable[[LogBuilder], None], dict[str, str], str, str]] = [
    # id, what happens after the first delegated turn, checkpoint fields, mode, reason
    ("resumes", nothing, {}, "resumed", "nothing changed"),
    ("settings only", settings_changed, {}, "resumed", "nothing changed"),
    ("queued then cancelled", cancelled_while_queued, {}, "resumed", "nothing changed"),
    ("other engine", nothing, {"engine": "other"}, "rebased", "not claude-agent-sdk's"),
    ("other provider", nothing, {"provider": "claude-max"}, "rebased", "provider changed"),
    ("other workspace", nothing, {"ws": "/elsewhere"}, "rebased", "workspace changed"),
    ("native turn", native_turn, {}, "rebased", "turns ran outside the session"),
    ("compaction", compaction, {}, "rebased", "compacted"),
    ("rewind", rewind_it, {}, "rebased", "rewound"),
    ("rewind undone", rewind_and_undo, {}, "rebased", "rewound"),
    ("fork", fork, {}, "rebased", "forked"),
    ("import", imported, {}, "rebased", "imported"),
    ("failed after commit", failed_after_commit, {}, "rebased", "did not complete"),
]


@pytest.mark.parametrize(
    ("after", "fields", "mode", "reason"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_resume_or_rebase(
    after: Callable[[LogBuilder], None], fields: dict[str, str], mode: str, reason: str
) -> None:
    b = LogBuilder("thr_dst")
    b.create(workspace=WS)
    delegated_turn(b, **fields)
    after(b)
    current = b.start_turn("next", provider="claude")
    decision = resume_or_rebase(
        replay(b.events), current, engine=ENGINE, provider="claude", workspace=WS
    )
    assert (decision.mode, reason in decision.reason) == (mode, True), decision.reason
    assert decision.session_id == (SESSION if mode == "resumed" else None)


def test_a_thread_never_delegated_rebases() -> None:
    b = LogBuilder("thr_new")
    b.create(workspace=WS)
    current = b.start_turn("hello")
    decision = resume_or_rebase(
        replay(b.events), current, engine=ENGINE, provider="claude", workspace=WS
    )
    assert (decision.mode, decision.reason) == ("rebased", "no session checkpoint in this thread")


def test_the_golden_log_records_what_the_decision_says() -> None:
    events = agent_sdk_turns()
    for i, event in enumerate(events):
        if isinstance(event, ev.DelegatedRuntime):
            assert event.turn_id is not None
            state = replay(events[:i])
            decision = resume_or_rebase(
                state,
                event.turn_id,
                engine=event.engine,
                provider="claude",
                workspace="/home/ana/src/ledger",
            )
            assert (decision.mode, decision.reason, decision.session_id) == (
                event.mode,
                event.reason,
                event.session_id,
            )


# -- the prompt ----------------------------------------------------------------


def test_with_neither_history_nor_instructions_the_prompt_is_the_bare_text() -> None:
    assert compose_prompt("", None, "fix the bug") == "fix the bug"
    assert compose_prompt("", "", "fix the bug") == "fix the bug"


def test_the_prompt_is_context_then_instructions_then_request() -> None:
    prompt = compose_prompt("User: hi\nAssistant: hello", "[kun] Plan mode: …", "go on")
    assert prompt == (
        "Earlier conversation in this thread (context — continue it; do not restart):\n"
        "<prior_conversation>\nUser: hi\nAssistant: hello\n</prior_conversation>\n\n"
        "[kun] Plan mode: …\n\n"
        "Current request:\ngo on"
    )
    assert compose_prompt("", "note", "go").startswith("note\n\nCurrent request:\ngo")


def test_the_transcript_shows_the_conversation_without_the_current_turn() -> None:
    b = LogBuilder("thr_t")
    b.create(workspace=WS)
    b.start_turn("list files")
    call = ToolCall(
        id="call_1", call_id="c1", name="Bash", arguments=msgspec.Raw(b'{"command":"ls"}')
    )
    b.item(call)
    b.item(ToolResult(id="res_1", call_id="c1", name="Bash", output="a.py"))
    b.item(AssistantText(id="txt_1", text="One file: a.py."))
    b.complete()
    current = b.start_turn("and now?")
    b.steer("hurry")
    b.user_message("hurry", steered=True)
    state = replay(b.events)
    assert history_transcript(prior_history(state, current)) == (
        "User: list files\n"
        'Assistant called Bash: {"command":"ls"}\n'
        "Tool Bash result: a.py\n"
        "Assistant: One file: a.py."
    )
    turn = state.turns[-1]
    assert request_text(turn.items) == "and now?"


def test_the_cap_keeps_a_transcript_exactly_at_it() -> None:
    text = "x" * MAX_TRANSCRIPT_BYTES
    assert cap_transcript(text) == text


def test_one_byte_over_the_cap_cuts_the_oldest_part() -> None:
    text = "A" + "x" * MAX_TRANSCRIPT_BYTES
    capped = cap_transcript(text)
    assert capped.startswith(CUT_MARK) and not capped.startswith(CUT_MARK + "A")
    assert len(capped.encode()) == MAX_TRANSCRIPT_BYTES
    assert capped.endswith("x" * 100)


@pytest.mark.parametrize("char", ["é", "中", "😀"])
@pytest.mark.parametrize("shift", [0, 1, 2, 3])
def test_a_cut_inside_a_character_drops_the_whole_character(char: str, shift: int) -> None:
    width = len(char.encode())
    text = "y" * shift + char * (MAX_TRANSCRIPT_BYTES // width + 2)
    capped = cap_transcript(text)
    data = capped.encode()
    assert len(data) <= MAX_TRANSCRIPT_BYTES
    assert len(data) > MAX_TRANSCRIPT_BYTES - width
    body = capped.removeprefix(CUT_MARK)
    assert set(body) == {char}  # starts on a whole character, no replacement char
    assert text.endswith(body)


def test_a_long_history_keeps_its_newest_turns() -> None:
    items = [UserMessage(id=f"m{i}", text=f"message {i} " + "z" * 1000) for i in range(100)]
    transcript = history_transcript(items)
    assert len(transcript.encode()) <= MAX_TRANSCRIPT_BYTES
    assert transcript.startswith(CUT_MARK)
    assert "message 99 " in transcript and "message 0 " not in transcript


def test_a_delegated_turn_waiting_for_an_answer_is_never_re_armed() -> None:
    from kun.domain.suspension import find_suspension

    def waiting(delegated: bool) -> ThreadState:
        b = LogBuilder("thr_wait")
        b.create(workspace=WS)
        turn_id = b.start_turn("ask me", provider="claude")
        if delegated:
            b.emit(ev.DelegatedRuntime, turn_id=turn_id, engine=ENGINE, mode="rebased")
        b.emit(ev.ItemCreated, turn_id=turn_id, item=QUESTION_CALL)
        b.start_tool(QUESTION_CALL)
        b.ask_user("which?")
        return replay(b.events)

    native = waiting(delegated=False)
    assert find_suspension(native, native.turns[-1]) is not None  # a native turn is re-armed
    state = waiting(delegated=True)
    assert find_suspension(state, state.turns[-1]) is None


QUESTION_CALL = ToolCall(
    id="call_q",
    status="in_progress",
    call_id="toolu_q",
    name="request_user_input",
    arguments=msgspec.Raw(b'{"question":"which?"}'),
)
