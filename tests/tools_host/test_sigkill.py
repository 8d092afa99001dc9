"""SIGKILL a process while it runs a tool; what the tool touched is whole.

* ``write_file``/``edit_file``: a child rewrites a large file in a loop (the
  whole content through ``write_file``, the header line through
  ``edit_file``) and is killed at a random moment, round after round. The
  file is always one complete version, never empty, cut short or mixed.
* ``bash``: a child runs a command that leaves a background ``sleep`` and a
  grandchild behind it; once the child is killed, all of them are gone soon
  after (a liveness bound, not a timing claim).

``KUN_CRASH_SEED`` replays a run's kill moments (the seed is in the failure
message); under ``CI`` the seed is fixed.
"""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROUNDS = 30
BODY_BYTES = 8 * 1024 * 1024
"""Large enough that a write takes milliseconds, so most kills land in one."""
GONE_WITHIN_S = 5.0

HEADER = re.compile(rb"gen (\d+)\n")

WRITER = """
import sys
from pathlib import Path

import anyio
import msgspec

from kun.tools import ToolContext, default_host

workspace, size = Path(sys.argv[1]), int(sys.argv[2])
host = default_host()
ctx = ToolContext(workspace=workspace, thread_id="t", turn_id="u", call_id="c")


async def main() -> None:
    gen = 0
    print("ready", flush=True)
    while True:
        body = ("x" if gen % 2 else "y") * size
        args = {"path": "big.txt", "content": f"gen {gen}\\n{body}"}
        result = await host.execute("write_file", msgspec.json.encode(args), ctx)
        assert not result.is_error, result.output
        edit = {"path": "big.txt", "old_string": f"gen {gen}\\n", "new_string": f"gen {gen + 1}\\n"}
        result = await host.execute("edit_file", msgspec.json.encode(edit), ctx)
        assert not result.is_error, result.output
        gen += 2


anyio.run(main)
"""


def seed() -> int:
    if "KUN_CRASH_SEED" in os.environ:
        return int(os.environ["KUN_CRASH_SEED"])
    return 8 if os.environ.get("CI") else random.randrange(2**32)


def whole_version(data: bytes) -> bool:
    """Whether ``data`` is one complete version the writer produced: a
    header, then a body of one letter and the full length."""
    header = HEADER.match(data)
    if header is None:
        return False
    body = data[header.end() :]
    return len(body) == BODY_BYTES and body.strip(body[:1]) == b""


@contextmanager
def child(*args: str) -> Iterator[subprocess.Popen[str]]:
    proc = subprocess.Popen(
        [sys.executable, *args], stdout=subprocess.PIPE, text=True, cwd=Path.cwd()
    )
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def test_sigkill_during_writes_leaves_a_whole_version(tmp_path: Path) -> None:
    rnd_seed = seed()
    rnd = random.Random(rnd_seed)
    ws = tmp_path / "ws"
    ws.mkdir()
    target = ws / "big.txt"
    target.write_bytes(b"gen 0\n" + b"y" * BODY_BYTES)
    versions: set[int] = set()
    for round_ in range(ROUNDS):
        with child("-c", WRITER, str(ws), str(BODY_BYTES)) as proc:
            assert proc.stdout is not None
            assert proc.stdout.readline() == "ready\n"
            time.sleep(rnd.uniform(0.0, 0.4))
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        data = target.read_bytes()
        assert whole_version(data), (
            f"round {round_} (KUN_CRASH_SEED={rnd_seed}): {len(data)} bytes, starting {data[:20]!r}"
        )
        header = HEADER.match(data)
        assert header is not None
        versions.add(int(header.group(1)))
    leftovers = [p.name for p in ws.iterdir() if p.name != "big.txt"]
    assert all(p.startswith(".big.txt.") and p.endswith(".kun-tmp") for p in leftovers)
    assert len(versions) > 1, "no round got past the first write; the test proves nothing"


BASH_RUNNER = """
import sys
from pathlib import Path

import anyio
import msgspec

from kun.tools import ToolContext, default_host

workspace = Path(sys.argv[1])
command = (
    "sleep 300 & echo $! > bg; "
    "(sleep 300 & echo $! > grandchild; wait) & echo $! > sub; "
    "echo $$ > shell; wait"
)
ctx = ToolContext(workspace=workspace, thread_id="t", turn_id="u", call_id="c")
print("ready", flush=True)
anyio.run(default_host().execute, "bash", msgspec.json.encode({"command": command}), ctx)
"""


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie awaiting its reaper counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def wait_for_pids(ws: Path, names: list[str]) -> list[int]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        texts = [(ws / n).read_text().strip() if (ws / n).exists() else "" for n in names]
        if all(texts):
            return [int(t) for t in texts]
        time.sleep(0.01)
    raise AssertionError("the command never started")


def test_bash_processes_die_with_a_sigkilled_kun(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    pids: list[int] = []
    try:
        with child("-c", BASH_RUNNER, str(ws)) as proc:
            assert proc.stdout is not None
            assert proc.stdout.readline() == "ready\n"
            pids = wait_for_pids(ws, ["bg", "grandchild", "sub", "shell"])
            assert all(alive(p) for p in pids)
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        deadline = time.monotonic() + GONE_WITHIN_S
        while any(alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert [p for p in pids if alive(p)] == []
    finally:
        for pid in pids:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
