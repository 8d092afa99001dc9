"""tools/transcript_diff.py: usage side by side, tolerant of bad lines."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import msgspec

from kun.testing.logbuilder import LogBuilder

SCRIPT = Path(__file__).resolve().parents[2] / "tools" / "transcript_diff.py"


def _log(path: Path, prompt: int, junk: bytes = b"") -> Path:
    b = LogBuilder(path.stem)
    b.create()
    b.start_turn("hi")
    b.usage(prompt_tokens=prompt, completion_tokens=10, cost_usd=0.01)
    b.usage(prompt_tokens=prompt, completion_tokens=10, cost_usd=None)
    b.complete()
    lines = [msgspec.json.encode(e) + b"\n" for e in b.events]
    lines.insert(2, junk)
    path.write_bytes(b"".join(lines))
    return path


def _run(*args: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True, check=False
    )


def test_prints_both_totals_and_the_delta(tmp_path: Path) -> None:
    proc = _run(_log(tmp_path / "a.jsonl", 100), _log(tmp_path / "b.jsonl", 150))
    assert proc.returncode == 0, proc.stderr
    rows = {line.split("  ")[0]: line.split() for line in proc.stdout.splitlines() if line}
    assert rows["prompt tokens"][-4:] == ["200", "300", "+100", "(+50.0%)"]
    assert rows["unpriced calls"][-3:] == ["1", "1", "0"]


def test_skips_and_counts_bad_lines(tmp_path: Path) -> None:
    bad = _log(tmp_path / "b.jsonl", 100, junk=b'{"kind":"usage","seq":\n\xff\xfe garbage\n')
    proc = _run(_log(tmp_path / "a.jsonl", 100), bad)
    assert proc.returncode == 0, proc.stderr
    assert "(2 unreadable lines skipped)" in proc.stdout
    assert "(0 unreadable lines skipped)" in proc.stdout


def test_a_missing_file_is_one_line_and_exit_2(tmp_path: Path) -> None:
    proc = _run(tmp_path / "nope.jsonl", tmp_path / "nope.jsonl")
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "cannot read" in proc.stderr
