"""tools/bench_open.py runs end to end at tiny sizes, and ``--profile``
splits an open from a snapshot into phases that still add up to what
``kun.store.snapshot.resume`` does (no timing is judged here)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "tools" / "bench_open.py"

PHASES = (
    "find the log's end (scan_tail)",
    "header + line digest",
    "read the frames",
    "decode the frames (JSON)",
    "detach tool-call arguments",
    "Projector(state): a TurnFold per turn",
    "fold the tail",
)


def test_every_size_prints_its_rows_and_phases(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--sizes", "600", "1200", "--runs=1", "--profile"],
        cwd=SCRIPT.parent,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    sizes = [line.split()[1] for line in out.splitlines() if line.startswith("log: ")]
    assert len(sizes) == 2 and sizes[0] != sizes[1], out
    for phase in PHASES:
        assert out.count(phase) == 2, (phase, out)
    for row in ("snapshot at the end", "outline at the end", "outline + ", "snapshot + "):
        assert out.count(row) == 2, (row, out)
