"""The store's compact lines: every golden log, written as the store writes
lines today (no thread id, defaults left out), reads back to the same events
and replays to the same projection; and the bytes it saves."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from kun.contracts import events as ev
from kun.domain.reduce import replay
from kun.store.codec import encode_line
from kun.store.reader import read_log

GOLDEN = Path(__file__).resolve().parents[2] / "events" / "golden"
LOGS = sorted(GOLDEN.glob("*.events.jsonl"))
_decoder = msgspec.json.Decoder(ev.Event)


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.name.removesuffix(".events.jsonl"))
def test_a_golden_log_written_compactly_reads_back_the_same(log: Path, tmp_path: Path) -> None:
    events = list(_decoder.decode_lines(log.read_bytes()))
    thread_id = events[0].thread_id
    path = tmp_path / thread_id / "events.jsonl"
    path.parent.mkdir()
    compact = b"".join(encode_line(e) for e in events)
    assert b'"thread_id":"' + thread_id.encode() not in compact
    assert b'"turn_id":null' not in compact and b'"v":1' not in compact
    path.write_bytes(compact)
    assert len(compact) < len(log.read_bytes())
    read = list(read_log(path))
    assert read == events
    assert replay(read) == replay(events)
