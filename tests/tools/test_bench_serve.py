"""tools/bench_serve.py runs end to end at tiny sizes, prints every row and
counts no event lost, duplicated or out of order (counts only: timings are
printed for people, never judged here)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "tools" / "bench_serve.py"

ROWS = (
    "delivery latency p50, paced",
    "delivery latency p99, paced",
    "delivery latency p50, burst",
    "delivery latency p99, burst",
    "events lost",
    "events duplicated",
    "events out of order",
    "raw log append rate",
    "server append rate, no subscribers",
    "server append rate, burst",
    "server event throughput, burst",
    "deliveries (events x subscribers) per second",
    "CPU of the server process",
    "CPU of the subscribers'",
)


def test_a_tiny_run_prints_every_row_and_loses_nothing() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--threads=3", "--subscribers=2", "--paced=3",
         "--interval=0.05", "--burst=5"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "3 threads x 2 subscribers (6 connected)" in out, out
    rows = {
        line.split(" | ")[0][2:]: line.split(" | ")[1]
        for line in out.splitlines()
        if line.startswith("| ") and "---" not in line
    }
    for what in ROWS:
        assert sum(key.startswith(what) for key in rows) == 1, f"no row {what!r} in:\n{out}"
    assert rows["events lost"] == "0"
    assert rows["events duplicated"] == "0"
    assert rows["events out of order"] == "0"
    assert "6 connected), 3 paced" in out and "; 54 deliveries" in out
