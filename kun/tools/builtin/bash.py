"""``bash``: run a shell command in the workspace.

The command runs as ``bash -c COMMAND`` with the workspace as its working
directory, no stdin, stderr merged into stdout (so the two interleave as on a
terminal), pagers disabled, in a new session so that everything it starts
forms one process group.

Not a login shell: the command inherits kun's environment (itself started
from the user's shell, so ``PATH`` and the rest are already set) less the
secrets :mod:`kun.tools.environment` withholds. A login shell would re-run
the user's profile for every call: slower, able to export secrets kun never
saw, and, when a call is stopped in the middle of it, able to leave locks
behind (pyenv's rehash lock stalls every later login shell for a minute).

Contract:

* The output is captured up to :data:`OUTPUT_CAP` bytes; beyond that the
  first and last halves are kept with a note in between saying how much was
  left out (the end of a build log matters as much as its start).
* The exit code is reported on the last line. A non-zero exit is *not* an
  ``is_error`` result: it is information (``grep`` finding nothing exits 1).
* Past ``timeout_s`` the whole process group is killed and the result is an
  error with code ``timeout``, carrying the output so far.
* On cancellation (an aborted turn) the whole process group is killed and
  reaped under a shielded scope, then the cancellation propagates.
* If kun itself dies mid-call (even by SIGKILL), the group is killed by the
  call's guard process (:mod:`kun.tools.process`), so no command of a call
  whose outcome the next start-up calls "unknown" goes on running.
* When the command itself has exited but a background job it started still
  holds the output open, kun stops reading after :data:`DRAIN_AFTER_EXIT_S`
  and closes its end, saying so. Unsandboxed, the job is not killed (it was
  started on purpose), but its next write to the closed output fails
  (``SIGPIPE``): a job meant to outlive the call redirects its output
  (``cmd > log 2>&1 &``).
* Sandboxed (:mod:`kun.tools.sandbox`; ``[tools.bash] sandbox``, decided
  per call from the approval policy it runs under), the command runs under
  ``bwrap``: writes outside the workspace, ``/tmp`` and ``writable`` fail,
  and to the workspace's ``.git`` too, the network is off unless
  ``network``, kun's home and the user's secret places are hidden, and
  nothing it starts outlives the call. A failure
  that points at the sandbox gets a ``[sandbox_denied: ...]`` line saying
  what it forbids and how the user widens it; where ``bwrap`` cannot run,
  the command is not run at all (``sandbox_unavailable``), never run
  unsandboxed instead.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio
from anyio.abc import Process

from kun.tools.base import ToolContext, ToolEffect, ToolOutput, make_spec
from kun.tools.environment import ToolEnvironment
from kun.tools.errors import SANDBOX_UNAVAILABLE, TIMEOUT
from kun.tools.process import spawn_guarded
from kun.tools.sandbox import (
    SandboxPolicy,
    SandboxSettings,
    SandboxUnavailable,
    bwrap_argv,
    denial,
    probe,
)

DEFAULT_TIMEOUT_S = 120
MAX_TIMEOUT_S = 600
OUTPUT_CAP = 30 * 1024
DRAIN_AFTER_EXIT_S = 0.5
_READ_SIZE = 65536

SPEC = make_spec(
    "bash",
    "Run a bash command (bash -c) in the workspace directory and return its combined "
    f"stdout and stderr and its exit code. Default timeout {DEFAULT_TIMEOUT_S} s, at most "
    f"{MAX_TIMEOUT_S} s; the command is killed when it runs out. Output over "
    f"{OUTPUT_CAP // 1024} KB keeps only its start and end: redirect long output to a file "
    "and search it. There is no stdin: do not run interactive commands. It may run in a "
    "sandbox: then writes outside the workspace and /tmp fail, the network is off, and "
    "background processes end with the command; a [sandbox_denied] note says so.",
    {
        "command": {"type": "string", "minLength": 1, "description": "The command to run."},
        "timeout_s": {
            "type": "number",
            "exclusiveMinimum": 0,
            "maximum": MAX_TIMEOUT_S,
            "description": f"Seconds before the command is killed. Default {DEFAULT_TIMEOUT_S}.",
        },
    },
    required=["command"],
)


class Capture:
    """The head and tail of a byte stream, within ``cap`` bytes in total."""

    def __init__(self, cap: int = OUTPUT_CAP) -> None:
        self.head_cap = cap // 2
        self.tail_cap = cap - self.head_cap
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        room = self.head_cap - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail += data
            if len(self.tail) > self.tail_cap:
                del self.tail[: len(self.tail) - self.tail_cap]

    def text(self) -> str:
        omitted = self.total - len(self.head) - len(self.tail)
        head = self.head.decode("utf-8", "replace")
        tail = self.tail.decode("utf-8", "replace")
        if omitted == 0:
            return head + tail
        return (
            f"{head}\n[... {omitted} bytes omitted: the output was {self.total} bytes, over "
            f"the {OUTPUT_CAP // 1024} KB cap; its first and last "
            f"{self.head_cap // 1024} KB are kept ...]\n{tail}"
        )


class Bash:
    """``environment`` says which of kun's variables a command does not get
    (:mod:`kun.tools.environment`; by default, the secret-looking ones);
    ``sandbox`` when a command runs sandboxed and in what (by default:
    ``auto``, nothing widened)."""

    spec = SPEC
    effect: ToolEffect = "exec"

    def __init__(
        self, environment: ToolEnvironment | None = None, sandbox: SandboxSettings | None = None
    ) -> None:
        self._environment = environment or ToolEnvironment()
        self._sandbox = sandbox or SandboxSettings()

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        command: str = args["command"]
        timeout = float(args.get("timeout_s", DEFAULT_TIMEOUT_S))
        argv = ["bash", "-c", command]
        sandbox = self._sandbox.policy_for(ctx.workspace, ctx.approval_policy)
        if sandbox is not None:
            try:
                bwrap = await anyio.to_thread.run_sync(probe)
            except SandboxUnavailable as exc:
                return ToolOutput(
                    output=f"Not run: {exc}. Tell the user; do not retry.",
                    is_error=True,
                    code=SANDBOX_UNAVAILABLE,
                )
            argv = bwrap_argv(bwrap, sandbox, argv)
        capture = Capture()
        with _output_pipe() as (read_fd, write_fd):
            try:
                guarded = await spawn_guarded(
                    argv,
                    cwd=ctx.workspace,
                    env=_environment(self._environment),
                    stdout=write_fd,
                    stderr=subprocess.STDOUT,
                )
            finally:
                os.close(write_fd)
            process = guarded.process
            finished = held = False
            try:
                with anyio.move_on_after(timeout):
                    held = await _collect(process, read_fd, capture)
                    finished = True
            finally:
                await guarded.close(kill=not finished)
        return _result(
            capture, process.returncode, timeout, finished=finished, held=held, sandbox=sandbox
        )


@contextmanager
def _output_pipe() -> Iterator[tuple[int, int]]:
    """A pipe whose read end kun owns and closes itself. (A pipe of the
    subprocess machinery would stay open for as long as a background job
    holds its write end.) The caller closes the write end once the child
    has it."""
    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)
    try:
        yield read_fd, write_fd
    finally:
        os.close(read_fd)


async def _collect(process: Process, read_fd: int, capture: Capture) -> bool:
    """Read until the command exits and its output ends; ``True`` if a
    background job still held the output when reading stopped."""
    ended = anyio.Event()

    async def read() -> None:
        while True:
            await anyio.wait_readable(read_fd)
            try:
                data = os.read(read_fd, _READ_SIZE)
            except BlockingIOError:
                continue
            if not data:
                break
            capture.feed(data)
        ended.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(read)
        await process.wait()
        with anyio.move_on_after(DRAIN_AFTER_EXIT_S):
            await ended.wait()
        tg.cancel_scope.cancel()
    return not ended.is_set()


def _result(
    capture: Capture,
    code: int | None,
    timeout: float,
    *,
    finished: bool,
    held: bool,
    sandbox: SandboxPolicy | None = None,
) -> ToolOutput:
    output = capture.text() or "(no output)"
    if not output.endswith("\n"):
        output += "\n"
    if not finished:
        return ToolOutput(
            output=f"{output}[killed after {timeout:g} s: the command did not finish in time. "
            f"Raise timeout_s (at most {MAX_TIMEOUT_S}), or run it in the background with "
            "its output redirected to a file.]",
            is_error=True,
            code=TIMEOUT,
        )
    if held:
        output += (
            "[a background process still holds the output; kun stopped reading it, so its "
            "next write will fail. Redirect background output to a file: cmd > log 2>&1 &]\n"
        )
    if sandbox is not None and (reason := denial(output, sandbox)):
        output += (
            f"[sandbox_denied: this command ran in kun's sandbox, which forbids it: {reason}. "
            "Do not try to get around it: do without, or tell the user, who can widen "
            "[tools.bash] writable or network in a kun.toml outside the workspace.]\n"
        )
    return ToolOutput(output=f"{output}[exit code: {code}]")


def _environment(environment: ToolEnvironment) -> dict[str, str]:
    """kun's environment without its secrets (the model reads whatever the
    command prints), and with pagers and git's password prompt off."""
    env = environment.command_env()
    env.update(PAGER="cat", GIT_PAGER="cat", GIT_TERMINAL_PROMPT="0")
    return env
