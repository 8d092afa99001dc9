"""The parts of a re-import's comparison: the latest ``thread_imported``
line is found wherever chunks split the log, and a session file's lines tell
unchanged, grown (by how many records) and rewritten apart."""

from __future__ import annotations

from pathlib import Path

import pytest

from kun.contracts.events import ThreadImported
from kun.portable import previous as previous_module
from kun.portable.previous import SourceLines, previous_import
from kun.store.codec import encode_line
from tests.store.factories import warning

TID = "thr_test"


def _marker(seq: int, source: str) -> bytes:
    return encode_line(ThreadImported(seq=seq, at=1_700_000_000_000, thread_id=TID, source=source))


@pytest.mark.parametrize("chunk", [1, 2, 7, 25, 26, 27, 64, 1 << 20])
def test_the_latest_marker_is_found_wherever_chunks_split(
    tmp_path: Path, chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(previous_module, "_CHUNK", chunk)
    log = tmp_path / TID / "events.jsonl"
    log.parent.mkdir()
    head = encode_line(warning(1)) + _marker(2, "bundle") + encode_line(warning(3))
    log.write_bytes(head + _marker(4, "codex") + encode_line(warning(5)))
    found = previous_import(log)
    assert found is not None
    assert (found.prefix, found.marker.seq, found.marker.source) == (len(head), 4, "codex")


def test_a_log_without_a_marker_or_no_log_has_no_previous_import(tmp_path: Path) -> None:
    log = tmp_path / TID / "events.jsonl"
    assert previous_import(log) is None
    log.parent.mkdir()
    log.write_bytes(encode_line(warning(1)))
    assert previous_import(log) is None


def test_a_marker_as_the_first_line_is_found(tmp_path: Path) -> None:
    log = tmp_path / TID / "events.jsonl"
    log.parent.mkdir()
    log.write_bytes(_marker(1, "bundle"))
    found = previous_import(log)
    assert found is not None and found.prefix == 0


def test_source_lines_tell_grown_from_rewritten() -> None:
    first = b'{"a":1}\n{"b":2}\n{"c":'
    lines = SourceLines.of(first)
    assert lines.count == 2
    assert lines.grown_by(first) == 1
    assert lines.grown_by(b'{"a":1}\n{"b":2}\n') == 0
    assert lines.grown_by(b'{"a":1}\n{"b":2}\n\n{"c":3}\n{"d":4}\n') == 2
    assert lines.grown_by(b'{"a":1}\n{"b":3}\n{"c":3}\n') is None
    assert lines.grown_by(b'{"a":1}\n') is None
