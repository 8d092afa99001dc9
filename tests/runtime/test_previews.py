"""Two windows: the log merges a stream's fragments for up to a second, live
followers get previews every 30 ms, and every character is shown once."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kun.contracts import events as ev
from kun.contracts.items import AssistantText, ToolCall, UserMessage
from kun.domain.reduce import replay
from kun.runtime.bus import EventBus, LiveText
from kun.runtime.coalesce import DeltaBuffer, stream_key
from kun.runtime.recorder import EventRecorder
from kun.store.memory import MemoryEventStore

TID = "thr_live"
TURN = "turn_1"


def draft(cls: type[Any], turn_id: str | None = TURN, **fields: Any) -> Any:
    return cls(seq=0, at=0, thread_id="", turn_id=turn_id, **fields)


def text(piece: str, item: str = "txt_1") -> ev.AssistantTextDelta:
    return draft(ev.AssistantTextDelta, item_id=item, text=piece)  # type: ignore[no-any-return]


def call(name: str, arguments: str) -> ev.ToolCallDelta:
    return draft(  # type: ignore[no-any-return]
        ev.ToolCallDelta, item_id="item_c", call_id="c", name=name, arguments=arguments
    )


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000_000

    def __call__(self) -> int:
        return self.now


async def start(recorder: EventRecorder) -> None:
    await recorder.record(
        TID,
        draft(ev.ThreadCreated, None),
        draft(ev.TurnStarted),
        draft(ev.ItemCompleted, item=UserMessage(id="msg_1", text="hi")),
    )


def shown(events: list[ev.Event]) -> dict[str, str]:
    """What a view draws per item: each delta through ``LiveText``."""
    rule = LiveText()
    out: dict[str, str] = {}
    for event in events:
        fresh = rule.fresh(event)
        if isinstance(fresh, ev.AssistantTextDelta | ev.AssistantReasoningDelta):
            out[fresh.item_id] = out.get(fresh.item_id, "") + fresh.text
        elif isinstance(fresh, ev.ToolCallDelta):
            out[fresh.item_id] = out.get(fresh.item_id, "") + fresh.name + fresh.arguments
    return out


# -- the pure parts ------------------------------------------------------------


def test_a_buffer_previews_each_fragment_once_and_its_merge_is_the_previews() -> None:
    buffer = DeltaBuffer(text("a"), 100)
    buffer.add(text("b"))
    first = buffer.preview()
    assert first is not None and first.text == "ab" and first.at == 100  # type: ignore[union-attr]
    assert buffer.preview() is None
    buffer.add(text("c"))
    buffer.live_at = 140
    second = buffer.preview()
    assert second is not None and (second.text, second.at) == ("c", 140)  # type: ignore[union-attr]
    assert buffer.merged().text == "abc"  # type: ignore[union-attr]


def test_the_rule_shows_previewed_text_once() -> None:
    rule = LiveText()
    p1, p2 = text("ab"), text("c")
    durable = ev.AssistantTextDelta(
        seq=9, at=0, thread_id=TID, turn_id=TURN, item_id="txt_1", text="abc"
    )
    assert rule.fresh(p1) is p1 and rule.fresh(p2) is p2
    assert rule.fresh(durable) is None
    assert rule.fresh(durable) is durable, "nothing pending: the durable text is new"
    assert rule.fresh(p1) is p1
    tail = rule.fresh(durable)
    assert isinstance(tail, ev.AssistantTextDelta) and tail.text == "c"


def test_the_rule_counts_a_tool_call_name_and_arguments_apart() -> None:
    rule = LiveText()
    rule.fresh(call("rea", '{"p'))
    durable = ev.ToolCallDelta(
        seq=3, at=0, thread_id=TID, turn_id=TURN, item_id="item_c", call_id="c",
        name="read", arguments='{"p":1}',
    )  # fmt: skip
    tail = rule.fresh(durable)
    assert isinstance(tail, ev.ToolCallDelta) and (tail.name, tail.arguments) == ("d", '":1}')


def test_a_follower_drops_a_preview_its_backlog_already_covered() -> None:
    """The preview was queued, then the durable event carrying its text was
    read from the log: serving the preview would show the text twice."""
    log = [ev.WarningEvent(seq=n, at=0, thread_id=TID, code="c", message="m") for n in (1, 2)]

    def backlog(after: int) -> Iterator[ev.Event]:
        i = 0
        while i < len(log):
            if log[i].seq > after:
                yield log[i]
            i += 1

    async def main() -> list[ev.Event]:
        bus = EventBus()
        follower = bus.follow(TID, after=0, backlog=backlog, live=True)
        got = [await follower.__anext__()]
        preview = ev.AssistantTextDelta(
            seq=0, at=0, thread_id=TID, turn_id=TURN, item_id="txt_1", text="ab"
        )
        durable = ev.AssistantTextDelta(
            seq=3, at=0, thread_id=TID, turn_id=TURN, item_id="txt_1", text="ab"
        )
        log.append(durable)
        bus.preview(preview, after=2)
        bus.publish(durable)
        got += [await follower.__anext__(), await follower.__anext__()]
        later = ev.AssistantTextDelta(
            seq=0, at=0, thread_id=TID, turn_id=TURN, item_id="txt_1", text="cd"
        )
        bus.preview(later, after=3)
        got.append(await follower.__anext__())
        await follower.aclose()
        return got

    got = anyio.run(main)
    assert [e.seq for e in got] == [1, 2, 3, 0]
    assert shown(got) == {"txt_1": "abcd"}


# -- through the recorder --------------------------------------------------------


async def _collect(follower: Any, out: list[ev.Event]) -> None:
    async for event in follower:
        out.append(event)
        if isinstance(event, ev.TurnCompleted):
            return


@pytest.mark.anyio
async def test_tokens_20_ms_apart_are_previewed_live_and_logged_in_few_lines() -> None:
    clock = Clock()
    store = MemoryEventStore()
    pieces = [f"w{n:02d} " for n in range(100)]
    async with store, EventRecorder(store, clock=clock) as recorder:
        await start(recorder)
        live: list[ev.Event] = []
        durable: list[ev.Event] = []
        follower = recorder.subscribe(TID, after=3, live=True)
        plain = recorder.subscribe(TID, after=3)
        item = AssistantText(id="txt_1", text="".join(pieces))
        async with anyio.create_task_group() as tg:
            tg.start_soon(_collect, follower, live)
            tg.start_soon(_collect, plain, durable)
            await anyio.sleep(0.01)
            for piece in pieces:
                await recorder.record(TID, text(piece))
                clock.now += 20
            (done,) = await recorder.record(TID, draft(ev.ItemCompleted, item=item))
            await recorder.record(TID, draft(ev.TurnCompleted))
    logged = list(store.read(TID, after=3))
    assert durable == logged
    assert [e for e in live if e.seq] == logged
    deltas = [e for e in logged if isinstance(e, ev.AssistantTextDelta)]
    assert len(deltas) <= 1 + 2000 // 1000 + 1
    previews = [e for e in live if not e.seq]
    assert len(previews) >= 45, "text reaches a viewer at least every 40 ms of stream"
    assert max(len(p.text) for p in previews) <= 8  # type: ignore[attr-defined]
    assert shown(live) == {"txt_1": "".join(pieces)}
    assert isinstance(done, ev.ItemCompleted) and done.text_from_deltas is not None
    assert done.item.text == ""  # type: ignore[union-attr]
    assert recorder_text(store) == "".join(pieces)


def recorder_text(store: MemoryEventStore) -> str:
    state = replay(list(store.read(TID)))
    return state.turns[0].items[-1].text  # type: ignore[union-attr, no-any-return]


# -- the invariant, under any schedule ----------------------------------------------

_ITEMS = ("txt_1", "txt_2")
_PIECE = st.text("ab\u00e9", min_size=1, max_size=3)
ops = st.lists(
    st.one_of(
        st.tuples(st.just("delta"), st.sampled_from(_ITEMS), _PIECE, st.integers(0, 700)),
        st.tuples(st.just("event"), st.just(""), st.just(""), st.integers(0, 50)),
        st.tuples(st.just("flush"), st.just(""), st.just(""), st.integers(0, 50)),
        st.tuples(st.just("sleep"), st.just(""), st.just(""), st.integers(0, 40)),
    ),
    max_size=40,
)


@given(ops)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_a_durable_delta_is_exactly_the_previews_of_its_stream_since_the_last_event(
    script: list[tuple[str, str, str, int]],
) -> None:
    live, logged = anyio.run(_run, script)
    assert [e for e in live if e.seq] == logged, "durable events once each, in order"
    previews: list[ev.Event] = []
    for event in live:
        if not event.seq:
            previews.append(event)
            continue
        keys = {stream_key(p) for p in previews}  # type: ignore[arg-type]
        assert len(keys) <= 1, "one stream pending at a time"
        if isinstance(event, ev.AssistantTextDelta) and previews:
            assert keys == {stream_key(event)}
            assert "".join(p.text for p in previews) == event.text  # type: ignore[attr-defined]
        else:
            assert not previews, "previews are followed by the delta that carries them"
        previews = []
    assert not previews
    expected: dict[str, str] = {}
    for event in logged:
        if isinstance(event, ev.AssistantTextDelta):
            expected[event.item_id] = expected.get(event.item_id, "") + event.text
    assert shown(live) == expected


async def _run(script: list[tuple[str, str, str, int]]) -> tuple[list[ev.Event], list[ev.Event]]:
    clock = Clock()
    store = MemoryEventStore()
    live: list[ev.Event] = []
    async with store:
        async with EventRecorder(store, clock=clock, log_window_ms=400, live_window_ms=5) as rec:
            await start(rec)
            follower = rec.subscribe(TID, after=3, live=True)
            joined, ended = anyio.Event(), anyio.Event()

            async def collect() -> None:
                async for event in follower:
                    joined.set()
                    live.append(event)
                    if isinstance(event, ev.TurnCompleted):
                        ended.set()

            async with anyio.create_task_group() as tg:
                tg.start_soon(collect)
                await rec.record(TID, draft(ev.WarningEvent, code="c", message="joined"))
                await joined.wait()
                for op, item, piece, dt in script:
                    clock.now += dt
                    if op == "delta":
                        await rec.record(TID, text(piece, item))
                    elif op == "event":
                        await rec.record(TID, draft(ev.WarningEvent, code="c", message="m"))
                    elif op == "flush":
                        await rec.flush(TID)
                    else:
                        await anyio.sleep(dt / 1000)
                await rec.flush(TID)
                await rec.record(TID, draft(ev.TurnCompleted))
                await ended.wait()
                tg.cancel_scope.cancel()
        logged = list(store.read(TID, after=3))
    return live, logged


@pytest.mark.anyio
async def test_item_completed_does_not_repeat_what_the_deltas_streamed() -> None:
    """Text and a tool call's arguments_text; a text the provider corrected
    is written whole."""
    store = MemoryEventStore()
    args = '{"path": "a.py"}'
    async with store, EventRecorder(store, clock=Clock()) as recorder:
        await start(recorder)
        for i in range(0, len(args), 4):
            await recorder.record(TID, call("read_file" if i == 0 else "", args[i : i + 4]))
        await recorder.record(TID, text("Hel"), text("lo", item="txt_2"))
        await recorder.record(TID, text("lo"))
        item = ToolCall(
            id="item_c", call_id="c", name="read_file", arguments=msgspec.Raw(args.encode()),
            arguments_text=args,
        )  # fmt: skip
        done = await recorder.record(
            TID,
            draft(ev.ItemCompleted, item=item),
            draft(ev.ItemCompleted, item=AssistantText(id="txt_1", text="Hello")),
            draft(ev.ItemCompleted, item=AssistantText(id="txt_2", text="Lo!")),
        )
        state = recorder.state(TID)
    assert [e.text_from_deltas is not None for e in done] == [True, True, False]  # type: ignore[attr-defined]
    assert done[0].item.arguments_text == "" and done[1].item.text == ""  # type: ignore[attr-defined]
    assert replay(list(store.read(TID))) == state
    items = {i.id: i for i in state.turns[0].items}
    assert items["item_c"].arguments_text == args  # type: ignore[union-attr]
    assert items["txt_1"].text == "Hello" and items["txt_2"].text == "Lo!"  # type: ignore[union-attr]
