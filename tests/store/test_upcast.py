"""Upcasting old event shapes at decode time, with a registry patched in.

``kun.domain.upcast`` is pure; these tests live with the store because the
store's codec is where upcasting happens.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kun.contracts.events import TurnSteered
from kun.domain import upcast as upcast_module
from kun.domain.upcast import upcast
from kun.store import CorruptLog, ReadReport, read_log
from kun.store.codec import decode_line, encode_line
from tests.store.factories import warning

OLD_STEER = b'{"kind":"turn_steered","seq":2,"at":5,"thread_id":"thr_test","v":1,"message":"hi"}'


def upcast_turn_steered_v1_v2(raw: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in raw.items() if k != "message"}
    out["text"] = raw["message"]
    return out


@pytest.fixture
def steer_v2(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pretend ``turn_steered`` v2 renamed ``message`` to ``text``."""
    monkeypatch.setitem(upcast_module.CURRENT_VERSION, "turn_steered", 2)
    monkeypatch.setitem(upcast_module.UPCASTERS, ("turn_steered", 1), upcast_turn_steered_v1_v2)


def test_upcast_applies_the_chain_and_sets_the_version(steer_v2: None) -> None:
    raw = {"kind": "turn_steered", "v": 1, "message": "hi"}
    assert upcast(raw) == {"kind": "turn_steered", "v": 2, "text": "hi"}
    assert raw == {"kind": "turn_steered", "v": 1, "message": "hi"}


def test_current_newer_and_unknown_mappings_pass_through(steer_v2: None) -> None:
    for raw in (
        {"kind": "turn_steered", "v": 2},
        {"kind": "turn_steered", "v": 3},
        {"kind": "hologram", "v": 1},
        {"no": "kind"},
    ):
        assert upcast(raw) is raw


def test_a_missing_step_is_a_lookup_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(upcast_module.CURRENT_VERSION, "turn_steered", 2)
    with pytest.raises(LookupError, match="turn_steered"):
        upcast({"kind": "turn_steered", "v": 1})


def test_a_v1_line_decodes_to_the_current_shape(steer_v2: None) -> None:
    assert decode_line(OLD_STEER) == TurnSteered(seq=2, at=5, thread_id="thr_test", text="hi", v=2)


def test_a_v1_line_that_also_fits_the_new_shape_is_still_upcast(
    steer_v2: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(
        upcast_module.UPCASTERS, ("turn_steered", 1), lambda raw: {**raw, "text": "upcast"}
    )
    line = b'{"kind":"turn_steered","seq":1,"at":5,"thread_id":"thr_test","v":1,"text":"x"}'
    assert decode_line(line).text == "upcast"  # type: ignore[union-attr]


def test_the_reader_upcasts_inside_a_block_that_otherwise_decodes_fast(
    steer_v2: None, tmp_path: Path
) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(encode_line(warning(1)) + OLD_STEER + b"\n" + encode_line(warning(3)))
    events = list(read_log(path))
    assert [e.seq for e in events] == [1, 2, 3]
    assert events[1] == TurnSteered(seq=2, at=5, thread_id="thr_test", text="hi", v=2)


def test_an_old_line_without_its_upcaster_is_corrupt(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(upcast_module.CURRENT_VERSION, "turn_steered", 2)
    path = tmp_path / "events.jsonl"
    path.write_bytes(encode_line(warning(1)) + OLD_STEER + b"\n" + encode_line(warning(3)))
    with pytest.raises(CorruptLog, match="no upcaster") as caught:
        list(read_log(path))
    assert (caught.value.line, caught.value.last_good_seq) == (2, 1)


def test_a_newer_version_that_no_longer_decodes_counts_as_unknown(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    newer = b'{"kind":"turn_steered","seq":2,"at":5,"thread_id":"thr_test","v":2,"msg":"x"}\n'
    path.write_bytes(encode_line(warning(1)) + newer + encode_line(warning(3)))
    report = ReadReport()
    assert [e.seq for e in read_log(path, mode="tolerant", report=report)] == [1, 3]
    assert report.unknown_kinds == {"turn_steered v2": 1}
