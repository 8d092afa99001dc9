"""tools/bench_suite.py runs its task suite once through a real ``kun serve``
and writes a report of the documented shape, and compares a run with a saved
report (counts are checked; timings are printed for people, never judged)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).resolve().parents[2] / "tools" / "bench_suite.py"
TASKS = {  # tool calls, approvals answered over HTTP, prompt tokens per run
    "answer": (0, 0, 200),
    "one_tool": (1, 0, 350),
    "parallel_reads": (2, 0, 350),
    "approval": (1, 1, 350),
    "multi_step_edit": (3, 0, 650),
}
METRICS = {
    "status", "ttft_ms", "turn_ms", "tool_calls", "tool_p95_ms", "delivery_p50_ms",
    "delivery_p95_ms", "prompt_tokens", "completion_tokens", "cost_usd", "events",
    "approvals", "tool_failures",
}  # fmt: skip


def _run(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--runs=1", *args],
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_one_run_writes_a_report_and_compares_with_a_baseline(tmp_path: Path) -> None:
    report_path = tmp_path / "report.json"
    out = _run(f"--out={report_path}")
    report = json.loads(report_path.read_text())
    assert report["suite"] == "kun-bench-suite/1" and report["runs"] == 1
    assert list(report["tasks"]) == list(TASKS)
    for name, (calls, approvals, prompt) in TASKS.items():
        task = report["tasks"][name]
        assert set(task) == METRICS, name
        assert task["status"] == "completed", name
        assert (task["tool_calls"], task["approvals"], task["prompt_tokens"]) == (
            calls, approvals, prompt
        ), name  # fmt: skip
        assert task["tool_failures"] == 0, name
        assert task["ttft_ms"] > 0 and task["turn_ms"] >= task["ttft_ms"], name
        assert task["delivery_p95_ms"] is not None and task["events"] > 0, name
    overall = report["overall"]
    assert set(overall) == METRICS
    assert overall["tool_calls"] == 7 and overall["prompt_tokens"] == 1900
    for name in [*TASKS, "overall"]:
        assert sum(line.startswith(f"| {name} |") for line in out.splitlines()) == 1, out

    compared = _run(f"--baseline={report_path}")
    table = compared.split("## Against the baseline")[1]
    rows = [line for line in table.splitlines() if line.startswith("| ") and "---" not in line]
    assert [row.split(" | ")[0][2:] for row in rows[1:]] == [*TASKS, "overall"]
    header = rows[0].split(" | ")
    tool_calls = header.index("tool_calls")
    assert rows[-1].split(" | ")[tool_calls] == "1.00x", table
