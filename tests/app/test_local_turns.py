"""The in-process adapter runs turns: start, wait, follow (entered before
the turn starts, nothing missed, in seq order), steer, interrupt, answers
to approvals (``always`` adds the allow rule) and questions, compaction;
threads are named by a prefix of their id."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from kun.app.lookup import AmbiguousThreadId
from kun.app.requests import StartTurn, UpdateThread
from kun.contracts import events as ev
from kun.contracts.threads import AllowRule
from kun.domain.state import ThreadState
from kun.model.scripted import text_reply, tool_reply
from kun.runtime.errors import AnswerConflict, ThreadBusy, UnknownTurn
from kun.store.errors import ThreadNotFound
from tests.app.support import WAIT_SECONDS, local
from tests.runtime.support import SlowTool, host_with

pytestmark = pytest.mark.anyio


async def test_a_turn_followed_from_before_it_starts(tmp_path: Path) -> None:
    script = [tool_reply("read_file", {"path": "a.py"}), text_reply("a.py prints a")]
    async with local(tmp_path, script) as t:
        thread = await t.new_thread(title="reading")
        seen: list[ev.Event] = []
        async with t.kun.follow(thread, after=0) as feed:
            started = await t.kun.start_turn(thread, StartTurn(text="what does a.py print?"))
            with anyio.fail_after(WAIT_SECONDS):
                async for event in feed:
                    seen.append(event)
                    if isinstance(event, ev.TurnCompleted):
                        break
        seqs = [e.seq for e in seen]
        assert seqs == list(range(1, len(seqs) + 1))
        turn = await t.kun.wait_turn(thread, started.turn_id)
        assert turn.status == "completed" and turn == await t.kun.turn(thread, started.turn_id)
        assert turn.items[-1].text == "a.py prints a"  # type: ignore[union-attr]
        assert t.opened == [t.workspace]


async def test_previews_come_with_seq_zero_and_resume_skips_what_was_seen(
    tmp_path: Path,
) -> None:
    async with local(tmp_path, [text_reply("one"), text_reply("two")]) as t:
        thread = await t.new_thread()
        first = await t.run(thread, "first")
        last = (await t.kun.thread(thread)).last_seq
        async with t.kun.follow(thread, after=last, previews=True) as feed:
            await t.kun.start_turn(thread, StartTurn(text="second"))
            with anyio.fail_after(WAIT_SECONDS):
                durable = []
                async for event in feed:
                    if event.seq:
                        durable.append(event)
                    if isinstance(event, ev.TurnCompleted):
                        break
        assert durable[0].seq == last + 1
        assert all(e.turn_id != first.turn_id for e in durable)


async def test_threads_are_named_by_prefix_and_mistakes_are_kun_errors(tmp_path: Path) -> None:
    async with local(tmp_path) as t:
        a = await t.new_thread()
        assert (await t.kun.thread(a[:8])).thread_id == a
        with pytest.raises(ThreadNotFound):
            await t.kun.thread("thr_nope")
        with pytest.raises(UnknownTurn, match="has no turn 'turn_nope'"):
            await t.kun.turn(a, "turn_nope")
        b = await t.new_thread()
        with pytest.raises(AmbiguousThreadId):
            await t.kun.thread("thr_")
        unique = a[: next(i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y) + 1]
        changed = await t.kun.update_thread(unique, UpdateThread(title="renamed"))
        assert changed.thread_id == a and changed.settings.title == "renamed"


async def test_steer_then_interrupt_a_busy_thread(tmp_path: Path) -> None:
    started = anyio.Event()
    tools = host_with(SlowTool(started=started))
    async with local(tmp_path, [tool_reply("slow"), tool_reply("slow")], tools=tools) as t:
        thread = await t.new_thread()
        turn = await t.kun.start_turn(thread, StartTurn(text="work"))
        await started.wait()
        with pytest.raises(ThreadBusy):
            await t.kun.start_turn(thread, StartTurn(text="again"))
        steered = await t.kun.steer(thread, turn.turn_id, "also b.py")
        assert steered.queued and steered.turn_id == turn.turn_id
        stopped = await t.kun.interrupt(thread[:9], turn.turn_id)
        assert stopped.status == "aborted"


async def test_always_adds_the_allow_rule_then_approves(tmp_path: Path) -> None:
    script = [
        tool_reply("write_file", {"path": "c.py", "content": "x"}),
        text_reply("written"),
    ]
    async with local(tmp_path, script) as t:
        thread = await t.new_thread(approval_policy="auto")
        turn = await t.kun.start_turn(thread, StartTurn(text="write c.py"))
        approval = await t.pending(thread, "pending_approvals")
        rule = AllowRule(tool="write_file")
        answered = await t.kun.answer_approval(approval, "approved", always=rule)
        assert answered.decision == "approved"
        with pytest.raises(AnswerConflict):
            await t.kun.answer_approval(approval, "denied")
        with anyio.fail_after(WAIT_SECONDS):
            done = await t.kun.wait_turn(thread, turn.turn_id)
        assert done.status == "completed" and (t.workspace / "c.py").read_text() == "x"
        assert (await t.kun.thread(thread)).settings.allow_rules == (rule,)


async def test_a_question_answered_and_a_compaction_with_nothing_to_do(tmp_path: Path) -> None:
    script = [tool_reply("request_user_input", {"question": "which?"}), text_reply("ok")]
    async with local(tmp_path, script) as t:
        thread = await t.new_thread()
        compacted = await t.kun.compact(thread)
        assert compacted.turn_id is None and compacted.reason
        turn = await t.kun.start_turn(thread, StartTurn(text="ask me"))
        question = await t.pending(thread, "pending_user_inputs")
        answered = await t.kun.answer_user_input(question, "b.py")
        assert answered.status == "answered"
        with anyio.fail_after(WAIT_SECONDS):
            assert (await t.kun.wait_turn(thread, turn.turn_id)).status == "completed"


async def test_the_engine_first_needed_in_another_task_closes_with_the_adapter(
    tmp_path: Path,
) -> None:
    async with local(tmp_path, [text_reply("one")]) as t:
        made: list[str] = []

        async def create() -> None:
            made.append(await t.new_thread())

        async with anyio.create_task_group() as tg:
            tg.start_soon(create)
        turn = await t.run(made[0], "first")
        assert turn.status == "completed" and t.opened == [t.workspace]
    assert (await _replayed(t.home, made[0])).turns[0].status == "completed"


async def _replayed(home: Path, thread: str) -> ThreadState:
    from kun.store.paths import log_path
    from kun.store.replay import replay_log

    return replay_log(log_path(home, thread))
