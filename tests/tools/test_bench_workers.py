"""tools/bench_workers.py runs end to end at a tiny size and prints every
row with a ratio (no timing is judged here)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.pg_server import PgServer

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).resolve().parents[2] / "tools" / "bench_workers.py"
ROWS = ("JSONL, 1 worker", "PostgreSQL, 1 worker", "PostgreSQL, 2 workers", "PostgreSQL, 3 workers")


def test_every_row_is_printed_with_its_ratio(postgres_server: PgServer) -> None:
    """``postgres_server``: only for its check that PostgreSQL can run here
    (skipped without it, failed under CI=true); the script starts its own."""
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--threads=3", "--turns=2", "--runs=1"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    for row in ROWS:
        assert re.search(rf"^\| {row} \| [\d,.]+ \| \d+\.\d\d \|$", done.stdout, re.M), (
            row,
            done.stdout,
        )
    for row in ("JSONL, same node", "PostgreSQL, across nodes"):
        assert re.search(rf"^\| {row} \| \d+\.\d \| \d+\.\d \|$", done.stdout, re.M), row
