"""tools/bench_sandbox.py runs end to end at a tiny size and prints a ratio
per command (timings are printed for people, never judged here)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "tools" / "bench_sandbox.py"


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
def test_a_quick_run_prints_a_ratio_per_command() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("ratio sandboxed/unsandboxed") == 3, done.stdout
