"""``kun replay`` prints its transcript a chunk at a time as it is drawn; the
bytes must be exactly those of the whole transcript joined and printed once,
however often it flushes, with or without ``--hidden`` and ``--reasoning``."""

from __future__ import annotations

import importlib
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from kun.contracts import events as ev
from kun.domain.transcript import render_transcript
from kun.entry import cli
from kun.store.codec import encode_line
from kun.store.replay import replay_log
from tests.properties.strategies import thread_logs

cli_main = importlib.import_module("kun.app.replaying")
GOLDEN = Path(__file__).resolve().parent.parent / "events" / "golden"
FLAGS = [(), ("--hidden",), ("--reasoning",), ("--hidden", "--reasoning")]


def _printed(path: Path, flags: tuple[str, ...], flush_at: int) -> str:
    saved = cli_main.TRANSCRIPT_FLUSH_AT
    cli_main.TRANSCRIPT_FLUSH_AT = flush_at
    try:
        result = CliRunner().invoke(cli, ["replay", str(path), *flags])
    finally:
        cli_main.TRANSCRIPT_FLUSH_AT = saved
    assert result.exit_code == 0, result.stderr
    return result.stdout_bytes.decode()


def _whole(path: Path, flags: tuple[str, ...]) -> str:
    state = replay_log(path, mode="tolerant")
    lines = render_transcript(
        state, show_hidden="--hidden" in flags, show_reasoning="--reasoning" in flags
    )
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("flags", FLAGS, ids=" ".join)
@pytest.mark.parametrize("flush_at", [1, 200, 1 << 16])
@pytest.mark.parametrize("golden", sorted(GOLDEN.glob("*.events.jsonl")), ids=lambda p: p.name)
def test_golden_transcripts_stream_byte_identical(
    golden: Path, flush_at: int, flags: tuple[str, ...]
) -> None:
    assert _printed(golden, flags, flush_at) == _whole(golden, flags)


@settings(max_examples=60, deadline=None)
@given(thread_logs(), st.sampled_from([1, 80, 1 << 16]), st.sampled_from(FLAGS))
def test_generated_transcripts_stream_byte_identical(
    events: list[ev.Event], flush_at: int, flags: tuple[str, ...]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "events.jsonl"
        log.write_bytes(b"".join(encode_line(e) for e in events))
        printed = _printed(log, flags, flush_at)
        assert printed == _whole(log, flags)
        assert printed.count("== turn ") + printed.count("-- turn ") >= len(
            replay_log(log, mode="tolerant").turns
        )
