"""``kun replay --from-seq N``: a page of the transcript, the turns that
started or changed from seq N on, drawn exactly as the whole transcript draws
them."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from kun.entry import cli
from kun.store.codec import encode_line
from kun.testing.logbuilder import LogBuilder

GOLDEN = Path(__file__).resolve().parent.parent / "events" / "golden"


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("golden", sorted(GOLDEN.glob("*.events.jsonl")), ids=lambda p: p.name)
def test_from_seq_1_is_the_whole_transcript_without_its_summary(golden: Path) -> None:
    code, whole, err = _run("replay", str(golden))
    assert code == 0, err
    code, page, err = _run("replay", str(golden), "--from-seq", "1")
    assert code == 0, err
    first, _, body = page.partition("\n")
    assert first.startswith("-- since seq 1 (to seq ")
    turns, _, _ = whole.partition("\n\nthread ")
    assert body.startswith("\n" + turns + "\n")
    assert whole.endswith(body[body.index("\n\ntotal: ") :])
    assert body.count("== turn ") == whole.count("== turn ")


def test_only_turns_touched_from_the_seq_are_printed(tmp_path: Path) -> None:
    b = LogBuilder("t_since")
    b.create(workspace="/w", title="two turns")
    b.start_turn("first question")
    b.assistant_text(["first answer"])
    b.complete()
    second = b.events[-1].seq + 1
    b.start_turn("second question")
    b.assistant_text(["second answer"])
    b.complete()
    log = tmp_path / "events.jsonl"
    log.write_bytes(b"".join(encode_line(e) for e in b.events))
    code, page, err = _run("replay", str(log), "--from-seq", str(second))
    assert code == 0, err
    assert f"-- since seq {second} (to seq {b.events[-1].seq}) --" in page
    assert "== turn 2 · completed" in page and "second answer" in page
    assert "turn 1" not in page and "first answer" not in page
    code, page, _ = _run("replay", str(log), "--from-seq", str(second - 1))
    assert "== turn 1 · completed" in page and "== turn 2" in page
    code, page, _ = _run("replay", str(log), "--from-seq", str(b.events[-1].seq + 1))
    assert code == 0 and "== turn" not in page and "total:" in page


def test_a_rewind_from_the_seq_shows_the_turns_it_hid() -> None:
    golden = GOLDEN / "rewound_thread.events.jsonl"
    code, page, err = _run("replay", str(golden), "--from-seq", "79")
    assert code == 0, err
    assert "== turn 1 " not in page
    assert "-- turn 2 · hidden by the rewind at seq 79 --" in page
    assert "== turn 4 · completed" in page


def test_from_seq_with_json_is_refused() -> None:
    golden = GOLDEN / "rewound_thread.events.jsonl"
    code, _, err = _run("replay", str(golden), "--from-seq", "3", "--json")
    assert code != 0 and "--from-seq prints a transcript" in err
