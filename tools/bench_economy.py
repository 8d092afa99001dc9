"""Log bytes per streamed text byte: what a streamed answer costs in the log.

    python tools/bench_economy.py [--tokens 600]

Streams a realistic answer through the real ``EventRecorder`` and
``JsonlEventStore`` on a simulated clock (issue 10, item 1): a reasoning
item, a ``read_file`` call whose arguments stream, and an answer of
``--tokens`` 4-character tokens, each fragment ``1``, ``20`` or ``50`` ms
after the last, with ids minted as kun mints them. For each pace it prints
the bytes of the lines that carry the streamed items (their deltas and
``item_completed``) per byte of streamed text (UTF-8), and the whole turn's
log per text byte, for:

- ``before``: the recorder with one 30 ms window for log and followers, its
  lines in the full envelope (every field, ``thread_id`` included), turn
  and item ids of 26 characters after the prefix and ``item_completed``
  repeating the text: the log as kun wrote it before;
- ``now``: the defaults (log window 1 s / 4 KB, followers 30 ms), compact
  lines (no ``thread_id``, defaults left out), thread-local ids (14
  characters), ``text_from_deltas`` and a tool call's ``call_id`` only on
  its first delta.

Three cases: the answer alone (the issue's measure), the whole turn, and a
``write_file``-like call streaming the same tokens as a file's content.
Only the recorder's clock is simulated: a buffer closed by the window on
the next fragment's arrival gives the same lines its timer would have.
Targets: 20 ms <= 2x, 1 ms <= 1.5x. The ``before`` encoding is checked
against a released golden log byte for byte, so the baseline is the real one.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import anyio
import msgspec

from kun.contracts import events as ev
from kun.contracts.items import AssistantReasoning, AssistantText, ToolCall
from kun.domain.reduce import replay
from kun.ids import IdMinter, new_id, new_thread_local_id
from kun.runtime.recorder import EventRecorder
from kun.store.jsonl import JsonlEventStore
from kun.store.paths import log_path

PACES_MS = (1, 20, 50)
GOLDEN = Path(__file__).resolve().parent.parent / "events" / "golden"
ANSWER = (
    'The `add` helper in src/calc.py returns `a - b`, so "2 + 2" gives 0.\n\n'
    "Fix: change the operator, then run `pytest -q` again; the failing test "
    "in tests/test_calc.py should pass. A test with negative numbers would "
    "have caught it sooner.\n"
)
THOUGHT = "The user asks why add() is wrong. Read the file first, then answer. "
ARGUMENTS = '{"path": "src/calc.py", "limit": 200}'
_encode = msgspec.json.encode


class Clock:
    def __init__(self) -> None:
        self.now = 1_767_225_600_000

    def __call__(self) -> int:
        return self.now


def _pieces(text: str, count: int) -> list[str]:
    """``count`` 4-character tokens cut from ``text`` repeated."""
    whole = text * (count * 4 // len(text) + 1)
    return [whole[i : i + 4] for i in range(0, count * 4, 4)]


def _draft(cls: type[ev.EventBase], turn_id: str | None, **fields: object) -> ev.Event:
    return cls(seq=0, at=0, thread_id="", turn_id=turn_id, **fields)  # type: ignore[return-value]


async def _stream(
    home: Path, tokens: int, pace_ms: int, full: str, mint: IdMinter, **windows: float
) -> str:
    """Record one turn (``full``: the ``answer`` alone, a ``turn`` with
    reasoning and a tool call before it, or a ``write`` call whose arguments
    stream ``tokens`` fragments of file content); the thread id."""
    clock = Clock()
    thread_id, turn_id = new_id("thr"), mint("turn")
    text_id = mint("txt")
    async with JsonlEventStore(home) as store, EventRecorder(store, clock=clock, **windows) as rec:
        await rec.record(thread_id, _draft(ev.ThreadCreated, None))
        await rec.record(thread_id, _draft(ev.TurnStarted, turn_id, provider="p", model="m"))
        if full == "write":
            content = "".join(_pieces(ANSWER, tokens))
            arguments = _encode({"path": "notes.md", "content": content}).decode()
            await _call(rec, clock, thread_id, turn_id, pace_ms, arguments, mint)
            await rec.record(thread_id, _draft(ev.TurnCompleted, turn_id, stop_reason="stop"))
            return thread_id
        if full == "turn":
            await _reason_and_call(rec, clock, thread_id, turn_id, pace_ms, tokens, mint)
        answer = _pieces(ANSWER, tokens)
        for piece in answer:
            await rec.record(
                thread_id, _draft(ev.AssistantTextDelta, turn_id, item_id=text_id, text=piece)
            )
            clock.now += pace_ms
        text = AssistantText(id=text_id, text="".join(answer))
        await rec.record(thread_id, _draft(ev.ItemCompleted, turn_id, item=text))
        await rec.record(thread_id, _draft(ev.TurnCompleted, turn_id, stop_reason="stop"))
    return thread_id


async def _reason_and_call(
    rec: EventRecorder,
    clock: Clock,
    thread_id: str,
    turn_id: str,
    pace_ms: int,
    tokens: int,
    mint: IdMinter,
) -> None:
    reasoning_id = mint("rsn")
    thought = _pieces(THOUGHT, max(tokens // 4, 1))
    for piece in thought:
        await rec.record(
            thread_id,
            _draft(ev.AssistantReasoningDelta, turn_id, item_id=reasoning_id, text=piece),
        )
        clock.now += pace_ms
    done = AssistantReasoning(id=reasoning_id, text="".join(thought))
    await rec.record(thread_id, _draft(ev.ItemCompleted, turn_id, item=done))
    await _call(rec, clock, thread_id, turn_id, pace_ms, ARGUMENTS, mint)


async def _call(
    rec: EventRecorder,
    clock: Clock,
    thread_id: str,
    turn_id: str,
    pace_ms: int,
    arguments: str,
    mint: IdMinter,
) -> None:
    call_id, item_call = mint("call"), mint("call")
    for i, piece in enumerate(arguments[j : j + 4] for j in range(0, len(arguments), 4)):
        name = "read_file" if i == 0 else ""
        await rec.record(
            thread_id,
            _draft(
                ev.ToolCallDelta,
                turn_id,
                item_id=item_call,
                call_id=call_id,
                name=name,
                arguments=piece,
            ),
        )
        clock.now += pace_ms
    call = ToolCall(
        id=item_call,
        call_id=call_id,
        name="read_file",
        arguments=msgspec.Raw(arguments.encode()),
        arguments_text=arguments,
    )
    await rec.record(thread_id, _draft(ev.ItemCompleted, turn_id, item=call))


_LATER_FIELDS = frozenset({"text_from_deltas", "arguments_from_text"})
"""Fields added with the compact log, which the old encoding never wrote."""


def full_line(event: ev.Event) -> bytes:
    """``event`` as kun wrote it before the compact envelope: every field of
    the event (``UNSET`` ones left out), items as they are."""
    fields: dict[str, object] = {"kind": type(event).__struct_config__.tag}
    for name in event.__struct_fields__:
        value = getattr(event, name)
        if value is not msgspec.UNSET and name not in _LATER_FIELDS:
            fields[name] = value
    return _encode(fields) + b"\n"


def _check_baseline() -> None:
    """The ``before`` encoding is the one the released golden logs were written in."""
    data = (GOLDEN / "multi_step_tools.v1.events.jsonl").read_bytes()
    events = msgspec.json.Decoder(ev.Event).decode_lines(data)
    if b"".join(full_line(e) for e in events) != data:
        sys.exit("bench_economy: the 'before' encoding no longer matches the v1 golden log")


_STREAMED = (ev.AssistantTextDelta, ev.AssistantReasoningDelta, ev.ToolCallDelta)


def _measure(home: Path, thread_id: str, full: bool) -> tuple[float, float]:
    """(streamed items' lines, whole log) bytes per streamed text byte."""
    data = log_path(home, thread_id).read_bytes()
    store_lines = data.splitlines(keepends=True)
    events = list(JsonlEventStore(home).read(thread_id))
    if full:
        texts = {i.id: i for t in replay(events).turns for i in t.items}
        events = [_with_text(e, texts) for e in events]
        store_lines = [full_line(e) for e in events]
    text_bytes = item_bytes = 0
    for event, line in zip(events, store_lines, strict=True):
        if isinstance(event, _STREAMED):
            text_bytes += len(getattr(event, "text", "").encode())
            text_bytes += len(getattr(event, "arguments", "").encode())
            text_bytes += len(getattr(event, "name", "").encode())
            item_bytes += len(line)
        elif isinstance(event, ev.ItemCompleted):
            item_bytes += len(line)
    return item_bytes / text_bytes, sum(map(len, store_lines)) / text_bytes


def _with_text(event: ev.Event, items: dict[str, object]) -> ev.Event:
    """``event`` as the old log wrote it: an ``item_completed`` with its
    text, a tool call's every delta naming its call."""
    if isinstance(event, ev.ToolCallDelta) and not event.call_id:
        call = items[event.item_id]
        assert isinstance(call, ToolCall)
        return msgspec.structs.replace(event, call_id=call.call_id)
    if isinstance(event, ev.ItemCompleted) and event.text_from_deltas is not None:
        item = items[event.item.id]
        return msgspec.structs.replace(
            event,
            item=item,  # type: ignore[arg-type]
            text_from_deltas=None,
            arguments_from_text=False,
        )
    return event


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=600)
    args = parser.parse_args(argv)
    _check_baseline()
    targets = {1: 1.5, 20: 2.0}
    with tempfile.TemporaryDirectory(prefix="kun-economy-") as tmp:
        for full, what in (
            ("answer", "an answer alone"),
            ("turn", "an answer after reasoning and a streamed tool call"),
            ("write", "a tool call streaming them as a file's content"),
        ):
            print(f"\n{args.tokens} tokens of 4 chars, {what}: streamed items' lines")
            print(f"{'pace':>6}  {'before':>8}  {'now':>8}  {'target':>8}   whole log before / now")
            for pace in PACES_MS:
                row = _row(Path(tmp) / f"{full}{pace}", args.tokens, pace, full)
                target = f"<= {targets[pace]}x" if pace in targets else ""
                print(
                    f"{pace:>4}ms  {row[0]:>7.2f}x  {row[1]:>7.2f}x  {target:>8}   "
                    f"{row[2]:.2f}x / {row[3]:.2f}x"
                )
    return 0


def _row(home: Path, tokens: int, pace: int, full: str) -> tuple[float, float, float, float]:
    """Before and now, streamed items' lines then whole log, per text byte."""

    async def before() -> str:
        return await _stream(home / "before", tokens, pace, full, new_id, coalesce_ms=30)

    async def now() -> str:
        return await _stream(home / "now", tokens, pace, full, new_thread_local_id)

    b_items, b_log = _measure(home / "before", anyio.run(before), full=True)
    n_items, n_log = _measure(home / "now", anyio.run(now), full=False)
    return b_items, n_items, b_log, n_log


if __name__ == "__main__":
    raise SystemExit(main())
