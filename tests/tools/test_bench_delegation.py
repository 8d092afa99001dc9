"""tools/bench_delegation.py runs end to end at a tiny size and prints
every setting with its speed-up (no timing is judged here)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).resolve().parents[2] / "tools" / "bench_delegation.py"


def test_every_setting_is_printed_with_its_speed_up() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--tasks=3", "--latency=0.01", "--runs=1"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    for parallel in (1, 3):
        assert re.search(rf"^ +{parallel} +\d+\.\d{{3}} +\d+\.\d\dx$", done.stdout, re.M), (
            parallel,
            done.stdout,
        )
    assert "overhead per sub-agent" in done.stdout
