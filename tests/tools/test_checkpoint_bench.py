"""tools/bench_checkpoints.py runs and prints its ratios (tiny sizes)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "tools" / "bench_checkpoints.py"


def test_bench_checkpoints_runs() -> None:
    args = [sys.executable, str(BENCH), "--runs", "2", "--kib", "1", "--files", "3"]
    done = subprocess.run(args, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "ratio" in done.stdout and "edit_file" in done.stdout
    assert "3 files of 10 KB put back" in done.stdout
