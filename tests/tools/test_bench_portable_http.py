"""tools/bench_portable_http.py runs end to end at tiny sizes and prints its
rows (timings and memory are printed for people, never judged here)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "tools" / "bench_portable_http.py"

pytestmark = pytest.mark.slow


def test_a_tiny_run_prints_every_row() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--turns=2", "--blob-mb=1", "--runs=1"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("thread: 99 events, bundle 1.0 MB"), done.stdout
    assert lines[1].startswith("local export+import ") and " ratio " in lines[1]
    assert lines[2].startswith("peak memory grew ") and "holding one copy grew it" in lines[2]
