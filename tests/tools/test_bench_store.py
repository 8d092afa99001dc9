"""tools/bench_store.py runs end to end at tiny sizes and prints each row
with a ratio (no timing is judged here)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.pg_server import PgServer

SCRIPT = Path(__file__).resolve().parents[2] / "tools" / "bench_store.py"
ROWS = ("durable appends", "delta appends", "replay")


def test_every_row_is_printed_with_its_ratio(postgres_server: PgServer) -> None:
    """``postgres_server``: only for its check that PostgreSQL can run here
    (skipped without it, failed under CI=true); the script starts its own."""
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--durable=20", "--deltas=40", "--replay=600", "--runs=1"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    for row in ROWS:
        found = re.search(
            rf"^\| {row} \| [\d,]+ events/s \| [\d,]+ events/s \| \d+\.\d\d \|$",
            done.stdout,
            re.M,
        )
        assert found, (row, done.stdout)
