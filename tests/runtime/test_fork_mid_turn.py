"""A fork whose point falls inside a turn: the fork keeps the turn up to
that point and ends it there as aborted (``forked``), says so, and is
settled: nothing runs or waits in it, reconciliation finds nothing, and a
new turn runs on it at once. The source's turn goes on untouched."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner

from kun.app.threadops import fork_noting_cut
from kun.contracts import events as ev
from kun.contracts.items import OPEN_STATUSES, Approval, ToolCall
from kun.domain.state import ThreadState
from kun.entry import cli
from kun.model.scripted import text_reply, tool_reply
from kun.runtime.reconcile import reconcile_orphaned_turns
from kun.runtime.service import TurnService
from kun.store.jsonl import JsonlEventStore
from tests.runtime.support import SlowTool, harness, host_with

pytestmark = pytest.mark.anyio


def _settled(state: ThreadState) -> None:
    assert all(t.settled for t in state.turns)
    assert state.status == "idle"
    assert state.pending_approvals == () and state.pending_user_inputs == ()
    assert all(i.status not in OPEN_STATUSES for t in state.turns for i in t.items)


async def _new_turn_runs(service: TurnService, thread_id: str) -> None:
    turn_id = await service.start_turn(thread_id, "carry on here")
    with anyio.fail_after(10):
        assert (await service.wait_turn(thread_id, turn_id)).status == "completed"


async def test_a_fork_of_a_turn_running_a_tool_ends_it_there(tmp_path: Path) -> None:
    started, release = anyio.Event(), anyio.Event()
    script = [tool_reply("slow"), text_reply("on the fork"), text_reply("source done")]
    tools = host_with(SlowTool(release=release, started=started))
    async with harness(tmp_path, script, tools=tools) as h:
        turn_id = await h.service.start_turn(h.thread_id, "work")
        await started.wait()
        new, _, note = await fork_noting_cut(h.service, h.thread_id)
        fork = h.service.state(new)
        _settled(fork)
        assert h.service.running_turn(new) is None
        (cut,) = fork.turns
        assert (cut.turn_id, cut.status, cut.abort_reason) == (turn_id, "aborted", "forked")
        call = next(i for i in cut.items if isinstance(i, ToolCall))
        assert call.status == "aborted"
        assert note is not None and f"inside turn 1 ({turn_id})" in note
        assert await reconcile_orphaned_turns(h.service) == []
        await _new_turn_runs(h.service, new)
        release.set()
        with anyio.fail_after(10):
            source_turn = await h.service.wait_turn(h.thread_id, turn_id)
        assert source_turn.status == "completed"


async def test_a_fork_of_a_turn_waiting_for_approval_does_not_wait(tmp_path: Path) -> None:
    script = [tool_reply("write_file", {"path": "x.txt", "content": "x"}), text_reply("fork")]
    async with harness(tmp_path, script, policy="auto") as h:
        turn_id = await h.service.start_turn(h.thread_id, "write x")
        with anyio.fail_after(5):
            async for event in h.service.recorder.subscribe(h.thread_id):
                if isinstance(event, ev.ApprovalRequested):
                    break
        new, _, note = await fork_noting_cut(h.service, h.thread_id)
        fork = h.service.state(new)
        _settled(fork)
        approval = next(i for t in fork.turns for i in t.items if isinstance(i, Approval))
        assert approval.status == "expired"
        assert note is not None and turn_id in note
        await _new_turn_runs(h.service, new)
        assert not (h.workspace / "x.txt").exists()
        assert h.state().pending_approvals, "the source still waits for its answer"


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_kun_fork_at_every_seq_is_settled_and_says_what_it_cut(tmp_path: Path) -> None:
    script = [
        text_reply("hello"),
        tool_reply("read_file", {"path": "a.py"}),
        text_reply("read it"),
    ]

    async def go() -> tuple[str, ThreadState]:
        async with harness(tmp_path, script, policy="full-auto") as h:
            for prompt in ("hello", "read a.py"):
                assert (await h.run(prompt)).status == "completed"
            return h.thread_id, h.state()

    thread, source = anyio.run(go)
    home = ("--home", str(tmp_path / "home"))
    inside: dict[int, int] = {}
    started = running = 0
    first_done = 1 << 62
    for event in JsonlEventStore(tmp_path / "home").read(thread):
        if isinstance(event, ev.TurnStarted):
            started += 1
            running = started
        elif isinstance(event, ev.TurnCompleted):
            running = 0
            first_done = min(first_done, event.seq)
        if running:
            inside[event.seq] = running
    assert set(inside.values()) == {1, 2}
    for seq in range(1, source.last_seq + 1):
        code, out, err = _run("fork", thread, "--at-seq", str(seq), "--json", *home)
        assert code == 0, err
        new = json.loads(out)["thread_id"]
        code, shown, _ = _run("replay", new, "--json", *home)
        fork = json.loads(shown)
        assert all(t["status"] != "running" for t in fork["turns"]), seq
        code, listed, _ = _run("threads", "--json", *home)
        status = next(t["status"] for t in json.loads(listed) if t["thread_id"] == new)
        assert status == ("completed" if seq >= first_done and seq not in inside else "idle"), seq
        if seq in inside:
            assert f"note: seq {seq} is inside turn {inside[seq]} (" in err, seq
            assert fork["turns"][-1]["abort_reason"] == "forked"
        else:
            assert err == "", seq
