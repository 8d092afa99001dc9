"""tools/bench_issue10.py runs end to end at tiny sizes and prints every row
of issue 10's table (no timing is judged here: benchmarks print ratios)."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "tools" / "bench_issue10.py"

ROWS = (
    *(
        f"{pace} ms per token: 600 tokens of 4 chars, {case}"
        for case in ("an answer alone", "an answer after reasoning", "a tool call streaming")
        for pace in (20, 1)
    ),
    "`kun replay` (transcript) rate / raw typed decode",
    "`kun replay --json` rate / raw decode",
    "time to first output of `kun replay`",
    "peak RSS, `kun replay --json`",
    "`kun threads`, 3 threads (warm index",
    "to continue it (snapshot of a clean exit)",
    "recorder delta path / a bare loop",
    "fsyncs per tool step",
    "replay time linear",
    "memory flat with snapshots",
)


def test_one_command_prints_every_row(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--quick",
            "--events=600",
            "--scale=500,1000",
            "--counts=1,3",
            "--runs=1",
            "--deltas=100",
            "--steps=2,3",
            f"--dir={tmp_path}",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode in (0, 1), done.stderr
    out = done.stdout
    issue = out.split("## `kun threads`")[0]
    rows = [line for line in issue.splitlines() if line.startswith("| ") and "---" not in line]
    assert len(rows) == 1 + 18, out
    for what in ROWS:
        assert sum(what in row for row in rows) == 1, f"no row {what!r} in:\n{out}"
    assert all(row.count(" | ") == 3 for row in rows), out
    assert "`kun threads`, 1 threads" in out and "`kun threads`, 3 threads" in out
    assert "| 503 events |" in out and "| 1,005 events |" in out
    assert list(tmp_path.iterdir()) == [], "the benchmark left files behind"


def test_the_log_bytes_rows_are_read_from_bench_economy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(SCRIPT.parent))
    bench = importlib.import_module("bench_issue10")
    fake = tmp_path / "bench_economy.py"
    assert bench.economy(fake) == ({}, "not measured: tools/bench_economy.py missing")
    fake.write_text(
        "print('600 tokens, an answer alone: streamed items lines')\n"
        "print('  pace    before       now   target   whole log before / now')\n"
        "print('   1ms     4.33x     1.63x  <= 1.5x   5.00x / 2.00x')\n"
        "print('  20ms    28.78x     2.30x  <= 2.0x   30.00x / 3.00x')\n"
        "print()\n"
        "print('600 tokens, a tool call: streamed items lines')\n"
        "print('  pace    before       now   target   whole log before / now')\n"
        "print('  20ms    36.00x     3.00x  <= 2.0x   37.00x / 3.10x')\n"
    )
    assert bench.economy(fake) == (
        {
            "600 tokens, an answer alone": {1: (4.33, 1.63), 20: (28.78, 2.3)},
            "600 tokens, a tool call": {20: (36.0, 3.0)},
        },
        None,
    )
    fake.write_text("raise SystemExit(3)\n")
    assert bench.economy(fake) == ({}, "not measured: tools/bench_economy.py failed (exit 3)")
