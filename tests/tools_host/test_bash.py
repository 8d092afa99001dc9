"""bash: exit codes, the output cap, timeouts and cancellation kill the
whole process group, the workspace is the working directory."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import anyio
import pytest

from kun.tools import Workspace
from kun.tools.builtin import bash as bash_module
from kun.tools.builtin.bash import Capture
from tests.tools_host.support import HOST, call, context

pytestmark = pytest.mark.anyio


def alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie awaiting its reaper
    counts as gone: it no longer runs)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def read_if_written(path: Path) -> str:
    return path.read_text().strip() if path.exists() else ""


async def wait_for_file(path: Path) -> str:
    """The file's text, once a child has written it (polling: the writer is
    another process, so there is no event to wait on)."""
    for _ in range(500):
        if text := read_if_written(path):
            return text
        await anyio.sleep(0.01)
    raise AssertionError(f"{path} was never written")


async def wait_until_gone(pid: int) -> None:
    """Wait for a killed process to disappear (its death is asynchronous)."""
    for _ in range(200):
        if not alive(pid):
            return
        await anyio.sleep(0.01)
    raise AssertionError(f"process {pid} is still alive")


async def test_runs_in_the_workspace_and_reports_exit_code(ws: Path) -> None:
    result = await call("bash", ws, command="pwd; echo err >&2; exit 3")
    assert not result.is_error
    assert result.output == f"{Workspace(ws).root}\nerr\n[exit code: 3]"


async def test_success_and_no_output(ws: Path) -> None:
    result = await call("bash", ws, command="true")
    assert result.output == "(no output)\n[exit code: 0]"


async def test_output_cap_keeps_head_and_tail(ws: Path) -> None:
    result = await call(
        "bash", ws, command="printf 'START'; head -c 100000 /dev/zero | tr '\\0' x; printf END"
    )
    assert result.output.startswith("START")
    assert "END\n[exit code: 0]" in result.output
    assert "bytes omitted: the output was 100008 bytes" in result.output
    assert len(result.output.encode()) < bash_module.OUTPUT_CAP + 500


def test_capture_is_exact_under_the_cap_and_split_over_it() -> None:
    small = Capture(cap=10)
    for piece in (b"abc", b"defg", b"hij"):
        small.feed(piece)
    assert small.text() == "abcdefghij"
    big = Capture(cap=10)
    for piece in (b"abc", b"defg", b"hijklm", b"nop"):
        big.feed(piece)
    assert big.head == b"abcde" and big.tail == b"lmnop"
    assert "6 bytes omitted" in big.text()


async def test_timeout_kills_the_process_group(ws: Path) -> None:
    pidfile = ws / "pid"
    with anyio.fail_after(5):
        result = await call(
            "bash", ws, command="sleep 30 & echo $! > pid; echo started; wait", timeout_s=0.5
        )
    assert result.is_error and result.code == "timeout"
    assert result.output.startswith("started\n[killed after 0.5 s")
    child = int(await wait_for_file(pidfile))
    await wait_until_gone(child)


async def test_a_stopped_command_gets_sigterm_first_so_its_exit_traps_run(ws: Path) -> None:
    command = "trap 'echo cleaned > trapped; exit 143' TERM; echo started; sleep 30 & wait"
    with anyio.fail_after(5):
        result = await call("bash", ws, command=command, timeout_s=0.5)
    assert result.code == "timeout"
    assert (ws / "trapped").read_text() == "cleaned\n"


async def test_a_command_that_ignores_sigterm_is_killed_all_the_same(ws: Path) -> None:
    command = "trap '' TERM; sleep 30 & echo $! > pid; echo started; wait"
    with anyio.fail_after(5):
        result = await call("bash", ws, command=command, timeout_s=0.5)
    assert result.code == "timeout"
    await wait_until_gone(int(await wait_for_file(ws / "pid")))


async def test_cancellation_kills_the_process_group_then_propagates(ws: Path) -> None:
    pidfile = ws / "pid"
    cancelled = False
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:

            async def run() -> None:
                nonlocal cancelled
                try:
                    await call("bash", ws, command="sleep 30 & echo $$ $! > pid; wait")
                except anyio.get_cancelled_exc_class():
                    cancelled = True
                    raise

            tg.start_soon(run)
            shell, child = map(int, (await wait_for_file(pidfile)).split())
            tg.cancel_scope.cancel()
    assert cancelled
    assert not alive(shell)
    await wait_until_gone(child)


async def test_background_job_holding_output_does_not_block(ws: Path) -> None:
    with anyio.fail_after(5):
        result = await call("bash", ws, command="(sleep 30; echo late) & echo $! > pid; echo now")
    assert result.output.startswith("now\n")
    assert "background process still holds the output" in result.output
    assert result.output.endswith("[exit code: 0]")
    os.killpg(os.getpgid(int((ws / "pid").read_text())), signal.SIGKILL)


async def test_timeout_bounds_are_schema_checked(ws: Path) -> None:
    too_long = await call("bash", ws, command="true", timeout_s=601)
    assert too_long.code == "invalid_arguments" and "timeout_s" in too_long.output
    zero = await call("bash", ws, command="true", timeout_s=0)
    assert zero.code == "invalid_arguments"


async def test_bash_is_exec(ws: Path) -> None:
    assert HOST.effect("bash") == "exec"
    assert context(ws).workspace == ws
