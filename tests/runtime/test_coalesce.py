"""Delta coalescing: the pure rules, each flush trigger in the recorder, and
what it saves in log bytes."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from msgspec.structs import replace

from kun.contracts import events as ev
from kun.contracts.items import UserMessage
from kun.domain.errors import ProjectionError
from kun.ids import new_id
from kun.runtime.bus import EventBus, LiveText
from kun.runtime.coalesce import Coalescer, Delta, DeltaBuffer, delta_size, merge_run
from kun.runtime.recorder import EventRecorder
from kun.store.errors import LogWriteFailed
from kun.store.jsonl import GROUP_COMMIT_KINDS, JsonlEventStore
from kun.store.memory import MemoryEventStore
from kun.store.paths import log_path
from kun.store.port import EventStore

TID = "thr_coal"
TURN = "turn_1"


def draft(cls: type[Any], turn_id: str | None = TURN, **fields: Any) -> Any:
    return cls(seq=0, at=0, thread_id="", turn_id=turn_id, **fields)


def text(piece: str, item: str = "txt_1", turn_id: str = TURN) -> ev.AssistantTextDelta:
    return draft(ev.AssistantTextDelta, turn_id, item_id=item, text=piece)  # type: ignore[no-any-return]


def reasoning(piece: str, item: str = "txt_1") -> ev.AssistantReasoningDelta:
    return draft(ev.AssistantReasoningDelta, item_id=item, text=piece)  # type: ignore[no-any-return]


def call(name: str, arguments: str, call_id: str = "call_1") -> ev.ToolCallDelta:
    return draft(  # type: ignore[no-any-return]
        ev.ToolCallDelta, item_id=f"item_{call_id}", call_id=call_id, name=name, arguments=arguments
    )


def texts(events: list[ev.Event]) -> list[str]:
    return [e.text for e in events if isinstance(e, ev.AssistantTextDelta)]


# -- the pure rules ------------------------------------------------------------


def offer_all(coalescer: Coalescer, *timed: tuple[int, Delta]) -> list[str]:
    """Offer fragments at the given times; the merged texts closed, then the
    pending one (as ``+text``)."""
    closed: list[str] = []
    for now, delta in timed:
        closed += [_text(b.merged()) for b in coalescer.offer(delta, now)]
    pending = coalescer.take()
    return closed + ([f"+{_text(pending.merged())}"] if pending else [])


def _text(delta: Delta) -> str:
    if isinstance(delta, ev.ToolCallDelta):
        return f"{delta.name}({delta.arguments})"
    return delta.text


def test_fragments_of_one_stream_within_the_window_become_one() -> None:
    coalescer = Coalescer(30, 4096)
    assert offer_all(coalescer, (0, text("a")), (10, text("b")), (29, text("c"))) == ["+abc"]


def test_the_window_counts_from_the_first_fragment() -> None:
    coalescer = Coalescer(30, 4096)
    timed = [(0, text("a")), (20, text("b")), (30, text("c")), (45, text("d")), (60, text("e"))]
    assert offer_all(coalescer, *timed) == ["ab", "cd", "+e"]


@pytest.mark.parametrize(
    "other",
    [text("x", item="txt_2"), text("x", turn_id="turn_2"), reasoning("x")],
    ids=["another item", "another turn", "another kind"],
)
def test_a_fragment_of_another_stream_closes_the_buffer(other: Delta) -> None:
    coalescer = Coalescer(30, 4096)
    assert offer_all(coalescer, (0, text("a")), (1, text("b")), (2, other)) == ["ab", "+x"]


def test_tool_call_fragments_merge_name_and_arguments_per_call() -> None:
    coalescer = Coalescer(30, 4096)
    timed = [
        (0, call("re", '{"pa')),
        (1, call("ad", 'th": ')),
        (2, call("", '"a"}')),
        (3, call("ls", "{}", call_id="call_2")),
    ]
    assert offer_all(coalescer, *timed) == ['read({"path": "a"})', "+ls({})"]


def test_the_buffer_is_closed_before_it_would_exceed_the_size_limit() -> None:
    coalescer = Coalescer(30, 10)
    timed = [(0, text("abcd")), (1, text("efgh")), (2, text("ijkl")), (3, text("mn"))]
    assert offer_all(coalescer, *timed) == ["abcdefgh", "+ijklmn"]


def test_a_full_buffer_or_a_big_fragment_is_closed_at_once() -> None:
    coalescer = Coalescer(30, 8)
    assert [_text(b.merged()) for b in coalescer.offer(text("abcd"), 0)] == []
    assert [_text(b.merged()) for b in coalescer.offer(text("efgh"), 1)] == ["abcdefgh"]
    assert [_text(b.merged()) for b in coalescer.offer(text("0123456789"), 2)] == ["0123456789"]
    assert coalescer.pending is None


def test_size_is_counted_in_utf8_bytes() -> None:
    assert delta_size(text("abc")) == 3
    assert delta_size(text("é😀")) == 6
    assert delta_size(call("rd", "{}")) == 4


def test_the_merged_event_keeps_the_first_envelope_and_arrival_time() -> None:
    buffer = DeltaBuffer(text("a"), at=100)
    buffer.add(text("b"))
    merged = buffer.merged()
    assert (merged.at, merged.item_id, merged.turn_id, _text(merged)) == (100, "txt_1", TURN, "ab")


def test_merge_run_merges_consecutive_fragments_and_keeps_order() -> None:
    warning = draft(ev.WarningEvent, code="c", message="m")
    batch: list[ev.Event] = [text("a"), text("b"), warning, text("c"), text("d", item="t2")]
    merged = merge_run(batch, 4096)
    assert [type(e).__name__ for e in merged] == [
        "AssistantTextDelta",
        "WarningEvent",
        "AssistantTextDelta",
        "AssistantTextDelta",
    ]
    assert texts(merged) == ["ab", "c", "d"]
    assert texts(merge_run([text("abc"), text("def")], 4)) == ["abc", "def"]


# -- the recorder's triggers ---------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000_000

    def __call__(self) -> int:
        return self.now


@pytest.fixture(params=["memory", "jsonl"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[EventStore]:
    made: EventStore = (
        MemoryEventStore() if request.param == "memory" else JsonlEventStore(tmp_path)
    )
    async with made:
        yield made


async def start(recorder: EventRecorder, thread_id: str = TID) -> None:
    message = UserMessage(id="msg_1", text="hi")
    await recorder.record(
        thread_id,
        draft(ev.ThreadCreated, None),
        draft(ev.TurnStarted),
        draft(ev.ItemCompleted, item=message),
    )


def logged(store: EventStore) -> list[ev.Event]:
    return list(store.read(TID, after=3))


def recorder_for(store: EventStore, **options: Any) -> EventRecorder:
    """A recorder whose timer never fires within a test unless asked to."""
    options.setdefault("coalesce_ms", 60_000)
    return EventRecorder(store, clock=options.pop("clock", Clock()), **options)


@pytest.mark.anyio
async def test_the_first_fragment_of_a_stream_is_buffered_with_the_rest(
    store: EventStore,
) -> None:
    """A line of its own would cost an envelope per item; live followers get
    it at once as a preview (next test), durable-only ones with the rest."""
    async with recorder_for(store) as recorder:
        await start(recorder)
        assert await recorder.record(TID, text("He")) == []
        assert await recorder.record(TID, text("llo")) == []
        assert await recorder.record(TID, text(", world")) == []
        assert texts(logged(store)) == []
        await recorder.flush(TID)
        assert texts(logged(store)) == ["Hello, world"]
        assert recorder.state(TID).turns[0].items[-1].text == "Hello, world"  # type: ignore[union-attr]


@pytest.mark.anyio
async def test_the_first_fragment_is_previewed_at_once(store: EventStore) -> None:
    async with recorder_for(store, live_window_ms=60_000) as recorder:
        await start(recorder)
        follower = recorder.subscribe(TID, after=3, live=True)
        seen: list[ev.Event] = []

        async def follow() -> None:
            with anyio.fail_after(1):
                seen.append(await follower.__anext__())

        async with anyio.create_task_group() as tg:
            tg.start_soon(follow)
            await anyio.sleep(0.01)
            await recorder.record(TID, text("He"))
        await follower.aclose()
        assert logged(store) == []
    assert [(e.seq, texts([e])) for e in seen] == [(0, ["He"])]


@pytest.mark.anyio
async def test_a_live_follower_joining_mid_buffer_catches_up(store: EventStore) -> None:
    """It gets what it missed of the pending buffer as that buffer's first
    preview, so the durable delta's prefix rule shows each character once."""
    with anyio.fail_after(5):
        async with recorder_for(store, live_window_ms=60_000) as recorder:
            await start(recorder)
            await recorder.record(TID, text("He"))
            follower = recorder.subscribe(TID, after=3, live=True)
            got = [await follower.__anext__()]
            await recorder.record(TID, text("llo"))
            await recorder.flush(TID)
            got += [await follower.__anext__(), await follower.__anext__()]
            await follower.aclose()
    assert [(e.seq, texts([e])) for e in got] == [(0, ["He"]), (0, ["llo"]), (4, ["Hello"])]
    live = LiveText()
    assert texts([e for e in map(live.fresh, got) if e is not None]) == ["He", "llo"]


@pytest.mark.anyio
async def test_an_invalid_first_fragment_fails_its_own_call(store: EventStore) -> None:
    async with recorder_for(store) as recorder:
        await start(recorder)
        with pytest.raises(ProjectionError):
            await recorder.record(TID, text("x", turn_id="turn_unknown"))
        assert logged(store) == []


@pytest.mark.anyio
async def test_a_first_fragment_of_another_type_fails_its_own_call(store: EventStore) -> None:
    """The item streams as text: in the buffer, or already in the log."""
    async with recorder_for(store) as recorder:
        await start(recorder)
        await recorder.record(TID, text("a"))
        with pytest.raises(ProjectionError):
            await recorder.record(TID, reasoning("b"))
        await recorder.flush(TID)
        with pytest.raises(ProjectionError):
            await recorder.record(TID, reasoning("c"))
        await recorder.flush(TID)
    assert texts(logged(store)) == ["a"]
    assert len(logged(store)) == 1


@pytest.mark.anyio
async def test_a_non_delta_event_flushes_the_buffer_first(store: EventStore) -> None:
    async with recorder_for(store) as recorder:
        await start(recorder)
        await recorder.record(TID, text("a"))
        await recorder.record(TID, text("b"))
        await recorder.record(TID, text("c"))
        (warning,) = await recorder.record(TID, draft(ev.WarningEvent, code="c", message="m"))
    events = logged(store)
    assert [type(e) for e in events] == [ev.AssistantTextDelta, ev.WarningEvent]
    assert texts(events) == ["abc"]
    assert events[-1] == warning
    assert [e.seq for e in events] == [4, 5]


@pytest.mark.anyio
async def test_a_fragment_of_another_item_flushes_the_buffer(store: EventStore) -> None:
    async with recorder_for(store) as recorder:
        await start(recorder)
        for piece in ("a", "b", "c"):
            await recorder.record(TID, text(piece))
        await recorder.record(TID, text("x", item="txt_2"))
        await recorder.record(TID, text("y", item="txt_2"))
        await recorder.record(TID, text("d"))
    assert [(e.item_id, e.text) for e in logged(store)] == [  # type: ignore[union-attr]
        ("txt_1", "abc"),
        ("txt_2", "xy"),
        ("txt_1", "d"),
    ]


@pytest.mark.anyio
async def test_the_size_limit_flushes_and_returns_the_merged_event(store: EventStore) -> None:
    async with recorder_for(store, coalesce_bytes=8) as recorder:
        await start(recorder)
        assert await recorder.record(TID, text("abcd")) == []
        assert texts(await recorder.record(TID, text("efgh"))) == ["abcdefgh"]
        assert await recorder.record(TID, text("ijk")) == []
        assert texts(await recorder.record(TID, text("0123456789"))) == ["0123456789"]
    assert texts(logged(store)) == ["abcdefgh", "ijk", "0123456789"]


@pytest.mark.anyio
async def test_the_window_closes_on_the_recorders_clock(store: EventStore) -> None:
    clock = Clock()
    async with recorder_for(store, clock=clock, coalesce_ms=30) as recorder:
        await start(recorder)
        await recorder.record(TID, text("a"))
        await recorder.record(TID, text("b"))
        clock.now += 10
        await recorder.record(TID, text("c"))
        clock.now += 20
        written = await recorder.record(TID, text("d"))
    assert texts(written) == []
    events = logged(store)
    assert texts(events) == ["abc", "d"]
    assert [e.at for e in events] == [clock.now - 30, clock.now]


@pytest.mark.anyio
async def test_the_timer_writes_a_quiet_buffer(store: EventStore) -> None:
    async with EventRecorder(store, coalesce_ms=5) as recorder:
        await start(recorder)
        follower = recorder.subscribe(TID, after=3)
        await recorder.record(TID, text("a"))
        await recorder.record(TID, text("b"))
        await recorder.record(TID, text("c"))
        with anyio.fail_after(5):
            merged = await follower.__anext__()
        await follower.aclose()
        assert texts(logged(store)) == ["abc"]
        assert logged(store)[-1] == merged


@pytest.mark.anyio
async def test_exit_writes_the_buffer_and_syncs(store: EventStore) -> None:
    async with recorder_for(store) as recorder:
        await start(recorder)
        await recorder.record(TID, text("a"))
        await recorder.record(TID, text("b"))
        assert texts(logged(store)) == []
    assert texts(logged(store)) == ["ab"]


@pytest.mark.anyio
async def test_followers_see_the_merged_events_the_log_has(store: EventStore) -> None:
    async with recorder_for(store) as recorder:
        await start(recorder)
        follower = recorder.subscribe(TID, after=3)
        for piece in ("a", "b", "c", "d"):
            await recorder.record(TID, text(piece))
        await recorder.flush(TID)
        live = [await follower.__anext__()]
        await follower.aclose()
    assert live == logged(store)
    assert texts(live) == ["abcd"]


@pytest.mark.anyio
async def test_a_log_window_of_zero_writes_each_delta_in_its_own_call(store: EventStore) -> None:
    async with recorder_for(store, log_window_ms=0, coalesce_ms=None) as recorder:
        await start(recorder)
        follower = recorder.subscribe(TID, after=3, live=True)
        for piece in ("a", "b", "c"):
            assert texts(await recorder.record(TID, text(piece))) == [piece]
        assert texts(logged(store)) == ["a", "b", "c"]
        live = [await follower.__anext__() for _ in range(3)]
        await follower.aclose()
    assert live == logged(store)


@pytest.mark.anyio
async def test_a_failed_background_flush_is_raised_by_the_next_call() -> None:
    class Flaky(MemoryEventStore):
        broken = False

        async def append(self, thread_id: str, events: Any, *, expected_seq: int) -> int:
            if self.broken:
                raise LogWriteFailed(Path("/fake"), "disk full")
            return await super().append(thread_id, events, expected_seq=expected_seq)

    store = Flaky()
    async with EventRecorder(store, coalesce_ms=5) as recorder:
        await start(recorder)
        await recorder.record(TID, text("a"))
        await recorder.record(TID, text("b"))
        store.broken = True
        await anyio.sleep(0.05)
        store.broken = False
        with pytest.raises(LogWriteFailed):
            await recorder.record(TID, draft(ev.WarningEvent, code="c", message="m"))
        (warning,) = await recorder.record(TID, draft(ev.WarningEvent, code="c", message="m"))
    assert warning.seq == 4
    assert texts(logged(store)) == []


# -- what it saves --------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize(("window_ms", "limit"), [(30, 3.0), (60, 2.0)])
async def test_log_bytes_per_1000_streamed_tokens(
    tmp_path: Path, window_ms: int, limit: float
) -> None:
    """1,000 tokens of 4 characters arriving 1 ms apart (a fast model), with
    ids as kun mints them. The delta lines' bytes against the text's.

    The brief's target is under 2x. With kun's envelope (~210 bytes a delta
    line: kind, seq, at and three 30-character ids) a window of 30 ms (SPEC
    default) holds 30 tokens = 120 bytes of text, so 30 ms cannot get under
    ~2.7x; 60 ms is the smallest round window that does. Both are pinned
    here so the figure is visible and cannot regress.
    """
    clock = Clock()
    thread_id, turn_id, item_id = new_id("thr"), new_id("turn"), new_id("txt")
    async with (
        JsonlEventStore(tmp_path) as store,
        EventRecorder(store, clock=clock, coalesce_ms=window_ms) as recorder,
    ):
        await recorder.record(
            thread_id, draft(ev.ThreadCreated, None), draft(ev.TurnStarted, turn_id)
        )
        for _ in range(1000):
            await recorder.record(thread_id, text("abcd", item=item_id, turn_id=turn_id))
            clock.now += 1
    lines = log_path(tmp_path, thread_id).read_bytes().splitlines(keepends=True)
    kinds = tuple(f'"kind":"{kind}"'.encode() for kind in GROUP_COMMIT_KINDS)
    delta_lines = [line for line in lines if any(kind in line for kind in kinds)]
    log_bytes = sum(map(len, delta_lines))
    ratio = log_bytes / 4000
    figure = (
        f"{window_ms} ms window: {log_bytes} log bytes in {len(delta_lines)} delta events "
        f"per 1,000 tokens (4,000 bytes of text) = {ratio:.2f}x"
    )
    print(figure)
    assert ratio < limit, figure


@pytest.mark.anyio
async def test_a_follower_takes_a_buffers_previews_only_from_its_first() -> None:
    """Without a catch-up, a follower that missed a buffer's first preview
    takes none of that buffer's: the prefix rule would show text twice."""
    bus = EventBus()
    follower = bus.follow(TID, after=0, backlog=lambda after: iter(()), live=True)
    piece = replace(text("x"), thread_id=TID)
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            got: list[ev.Event] = []

            async def follow() -> None:
                got.extend([await follower.__anext__(), await follower.__anext__()])

            tg.start_soon(follow)
            await anyio.sleep(0.01)
            bus.preview(replace(piece, text="missed-start"), 0, first=False)
            bus.preview(replace(piece, text="a"), 0, first=True)
            bus.preview(replace(piece, text="b"), 0, first=False)
    await follower.aclose()
    assert texts(got) == ["a", "b"]
