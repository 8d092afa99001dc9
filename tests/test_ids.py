"""``kun.ids``: thread-local ids are short, and both kinds keep their order.

The properties drive :class:`~kun.ids.IdMinter` with any clock (standing
still, stepping back, jumping) and any random draws (the top value
included, which forces a carry into the next millisecond); the turn tests
check what a real turn writes and that long ids of old logs still work.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import anyio
import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kun.contracts import events as ev
from kun.contracts.items import ToolCall
from kun.contracts.model import (
    CompletedChunk,
    ReasoningDeltaChunk,
    TextDeltaChunk,
    ToolCallCompleteChunk,
    ToolCallDeltaChunk,
)
from kun.domain.reduce import replay
from kun.domain.turnref import find_turn
from kun.ids import TIME_CHARS, IdMinter, new_id, new_thread_local_id
from kun.model.scripted import text_reply, tool_reply
from kun.model.toolcalls import SYNTHETIC_ID_PREFIX
from kun.runtime import loop as loop_module
from kun.runtime import service as service_module
from kun.store.jsonl import JsonlEventStore
from kun.store.paths import validate_thread_id
from tests.runtime.support import harness

_ALPHABET = set("0123456789abcdefghjkmnpqrstvwxyz")
_MS = 1_000_000
_PREFIXES = st.sampled_from(["turn", "txt", "rsn", "call", "msg", "err", "res", "a0"])


def _scripted(values: list[int]) -> Iterator[int]:
    yield from values
    while True:
        yield values[-1] if values else 0


def _minter(random_chars: int, clock_ms: list[int], draws: list[int]) -> IdMinter:
    clock, rand = _scripted(clock_ms), _scripted(draws)
    bits = 5 * random_chars
    return IdMinter(
        random_chars,
        clock_ns=lambda: next(clock) * _MS,
        randbits=lambda n: next(rand) % (1 << n) if n == bits else -1,
    )


@given(
    random_chars=st.sampled_from([4, 16]),
    clock_ms=st.lists(st.integers(0, 2**40), max_size=60),
    draws=st.lists(st.one_of(st.integers(0, 2**80 - 1), st.just(2**80 - 1)), max_size=60),
    prefixes=st.lists(_PREFIXES, min_size=2, max_size=60),
)
def test_ids_of_one_process_strictly_increase_whatever_the_clock(
    random_chars: int, clock_ms: list[int], draws: list[int], prefixes: list[str]
) -> None:
    mint = _minter(random_chars, clock_ms, draws)
    ids = [mint(prefix) for prefix in prefixes]
    suffixes = [value.split("_", 1)[1] for value in ids]
    assert all(a < b for a, b in itertools.pairwise(suffixes))
    for prefix, value, suffix in zip(prefixes, ids, suffixes, strict=True):
        assert value.startswith(prefix + "_")
        assert len(suffix) == TIME_CHARS + random_chars and set(suffix) <= _ALPHABET
        assert validate_thread_id(value) == value


@given(
    first_ms=st.integers(0, 2**40),
    later_by=st.integers(1, 2**20),
    draws=st.tuples(st.integers(0, 2**20 - 1), st.integers(0, 2**20 - 1)),
)
def test_a_later_millisecond_sorts_after_whatever_the_random_part(
    first_ms: int, later_by: int, draws: tuple[int, int]
) -> None:
    """Two processes (two minters) writing one thread in turn: the later
    one's ids sort after the earlier one's, so they cannot be equal."""
    earlier = _minter(4, [first_ms], [draws[0]])("txt")
    later = _minter(4, [first_ms + later_by], [draws[1]])("txt")
    assert earlier < later


def test_the_top_random_value_carries_into_the_next_millisecond() -> None:
    mint = _minter(4, [7, 7, 7], [2**20 - 1])
    first, second, third = mint("txt"), mint("txt"), mint("txt")
    assert first[4:] == "0000000007" + "zzzz"
    assert second[4:] == "0000000008" + "0000"
    assert third[4:] == "0000000008" + "0001"


def test_the_module_minters_have_their_widths() -> None:
    assert len(new_id("thr")) == len("thr_") + 26
    assert len(new_thread_local_id("turn")) == len("turn_") + 14


def _short(value: str, prefix: str) -> bool:
    return value.startswith(prefix + "_") and len(value) == len(prefix) + 1 + 14


@pytest.mark.anyio
async def test_a_real_turn_writes_short_turn_and_item_ids(tmp_path: Path) -> None:
    """Every turn and item id the runtime mints is short; the thread's and
    the approval's stay long. A call the provider gave no id takes its
    item's id as its call id."""
    synthetic = f"{SYNTHETIC_ID_PREFIX}0"
    arguments = '{"path": "a.py"}'
    script = [
        [
            ReasoningDeltaChunk(text="look first"),
            TextDeltaChunk(text="Reading."),
            ToolCallDeltaChunk(call_id=synthetic, name="read_file", arguments=arguments[:7]),
            ToolCallDeltaChunk(call_id=synthetic, arguments=arguments[7:]),
            ToolCallCompleteChunk(
                call_id=synthetic, name="read_file", arguments=msgspec.Raw(arguments.encode())
            ),
            CompletedChunk(stop_reason="tool_calls"),
        ],
        tool_reply("write_file", {"path": "c.py", "content": "x"}, call_id="toolu_given"),
        text_reply("done"),
    ]
    async with harness(tmp_path, script, policy="auto") as h:
        turn_id = await h.service.start_turn(h.thread_id, "go")
        with anyio.fail_after(10):
            async for event in h.service.recorder.subscribe(h.thread_id):
                if isinstance(event, ev.ApprovalRequested):
                    await h.service.answer_approval(event.approval_id, "approved")
                    break
            turn = await h.service.wait_turn(h.thread_id, turn_id)
    assert turn.status == "completed"
    assert _short(turn_id, "turn") and len(h.thread_id) == len("thr_") + 26
    kinds = [str(type(item).__struct_config__.tag) for item in turn.items]
    assert set(kinds) == {*_ITEM_PREFIXES, "approval"}
    for kind, item in zip(kinds, turn.items, strict=True):
        if kind == "approval":
            assert len(item.id) == len("apr_") + 26
        else:
            assert _short(item.id, _ITEM_PREFIXES[kind]), item
    first_call = turn.items[kinds.index("tool_call")]
    assert isinstance(first_call, ToolCall) and first_call.call_id == first_call.id


_ITEM_PREFIXES = {
    "user_message": "msg",
    "assistant_reasoning": "rsn",
    "assistant_text": "txt",
    "tool_call": "call",
    "tool_result": "res",
}


@pytest.mark.anyio
async def test_a_thread_with_long_ids_continues_with_short_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A thread whose first turn was minted with long ids (as kun did
    before) continues: both turns replay from the log and are found by id
    and by prefix."""
    async with harness(tmp_path, [text_reply("old"), text_reply("new")]) as h:
        with monkeypatch.context() as patched:
            patched.setattr(service_module, "new_thread_local_id", new_id)
            patched.setattr(loop_module, "new_thread_local_id", new_id)
            old = await h.run("first")
        new = await h.run("second")
        live = h.state()
    assert len(old.turn_id) == len("turn_") + 26 and _short(new.turn_id, "turn")
    assert all(len(item.id) == len("msg_") + 26 for item in old.items[:1])
    state = replay(JsonlEventStore(h.home).read(h.thread_id))
    assert state.turns == live.turns
    assert [t.status for t in state.turns] == ["completed", "completed"]
    assert find_turn(state, old.turn_id)[0] == 1 and find_turn(state, old.turn_id[:-3])[0] == 1
    assert find_turn(state, new.turn_id)[0] == 2 and find_turn(state, new.turn_id[:-3])[0] == 2
