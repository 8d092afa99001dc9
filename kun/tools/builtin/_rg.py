"""ripgrep, the search engine behind ``grep`` and ``glob``.

Why a subprocess and why ripgrep: a search must take time linear in its
input and end the moment its call is aborted. Python's ``re`` backtracks
(``(a+)+$`` on 27 ``a``\\ s and a ``!`` takes 12 s) and holds the GIL while it
does, so a worker thread running it freezes the event loop and cannot be
stopped. ``rg`` (the ``ripgrep`` wheel, the same binary Claude Code and Codex
use) matches regexes and globs with finite automata, in linear time, and as
a process it can be killed: on abort its group is killed at once, and if kun
dies it is killed by its guard (:mod:`kun.tools.process`).

What the search sees follows ripgrep's rules, chosen on purpose:

* files ignored by ``.gitignore`` (in a git work tree), ``.ignore`` and
  ``.rgignore`` are skipped, as a developer's own search would; the path a
  search starts from is searched even if ignored;
* hidden files are searched, but never ``.git``, ``.hg`` or ``.svn``;
* symlinks met in a walk are not followed (a link's target is found under
  its own path when it is inside), and only regular files are read: a FIFO
  or a device is never opened;
* the starting directory or file is opened by kun beneath the workspace
  root and handed to ``rg`` by descriptor (``/proc/self/fd``), so a symlink
  swapped in for it after the check is not followed.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import anyio

from kun.tools.builtin._common import off_loop
from kun.tools.errors import InvalidArguments, ToolError
from kun.tools.process import spawn_guarded
from kun.tools.workspace import SKIPPED_DIRS, Workspace, file_kind, not_a_file

SEARCH_UNAVAILABLE = "search_unavailable"
MAX_RECORD_BYTES = 256 * 1024
"""A longer output record (a path, or a line ``rg`` already cut) is cut here:
memory stays bounded whatever ``rg`` prints."""
_READ_SIZE = 65536
_STDERR_CHARS = 300

COMMON_ARGS = (
    "--no-config",
    "--hidden",
    "--color=never",
    "--sort=path",
    "--no-follow",
)
"""Flags of every search: no user config (its flags would change the output
format), hidden files in, symlinks not followed, results sorted by path (a
deterministic order: the same search gives the same bytes)."""

SKIP_VCS = tuple(arg for d in sorted(SKIPPED_DIRS) for arg in ("--glob", f"!{d}"))
"""Excludes, given after any other ``--glob`` so they win."""


@cache
def rg_binary() -> str:
    """The ``rg`` of the ``ripgrep`` wheel: beside this Python, in its
    scripts directory, then on ``PATH``."""
    candidates = [Path(sys.executable).parent / "rg", Path(sysconfig.get_path("scripts")) / "rg"]
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which("rg")
    if found is None:
        raise ToolError(
            SEARCH_UNAVAILABLE,
            "ripgrep (rg) is not installed: it was looked for beside "
            f"{sys.executable} and on PATH. kun depends on the 'ripgrep' package; "
            "reinstall kun (pip install kun) to get it. Meanwhile, search with bash.",
        )
    return found


@dataclass(frozen=True)
class Target:
    """Where a search starts, held open: ``fd`` is a directory (``is_dir``)
    or a regular file; ``shown`` its workspace-relative path."""

    fd: int
    is_dir: bool
    shown: str
    real: Path

    @property
    def fd_path(self) -> str:
        """A path that names exactly the open descriptor (no lookup by name
        in between); the real path where ``/proc`` is missing."""
        return f"/proc/self/fd/{self.fd}" if _has_proc() else str(self.real)


async def open_target(
    workspace: Workspace, path: str, tool: str, *, dirs_only: bool = False
) -> Target:
    """Open ``path`` beneath the workspace root: a directory, or (unless
    ``dirs_only``) a regular file. The caller closes ``fd``."""
    return await off_loop(
        lambda: _open_target(workspace, path, tool, dirs_only=dirs_only),
        abandon_on_cancel=False,
    )


def _open_target(workspace: Workspace, path: str, tool: str, *, dirs_only: bool) -> Target:
    with workspace.locate(path) as where:
        if where.name is None:
            return Target(os.dup(where.dir_fd), True, where.shown, where.real)
        try:
            mode = os.stat(where.name, dir_fd=where.dir_fd, follow_symlinks=False).st_mode
        except FileNotFoundError:
            raise ToolError("not_found", f"{where.shown} does not exist.") from None
        is_dir = stat.S_ISDIR(mode)
        if dirs_only and not is_dir:
            raise ToolError("not_a_directory", f"{where.shown} is not a directory.")
        if not is_dir and not stat.S_ISREG(mode):
            raise not_a_file(where.shown, file_kind(mode), tool)
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
        if is_dir:
            flags |= os.O_DIRECTORY
        try:
            fd = os.open(where.name, flags, dir_fd=where.dir_fd)
        except OSError as exc:
            raise ToolError(
                "path_changed", f"{where.shown} changed while kun opened it ({exc.strerror})."
            ) from None
        if stat.S_IFMT(os.fstat(fd).st_mode) != stat.S_IFMT(mode):
            os.close(fd)
            raise ToolError("path_changed", f"{where.shown} changed while kun opened it.")
        return Target(fd, is_dir, where.shown, where.real)


async def check_regex(pattern: str, *, ignore_case: bool) -> None:
    """``invalid_arguments`` with ripgrep's own message if it cannot compile
    ``pattern`` (its Rust regex syntax)."""
    flags = ["--ignore-case"] if ignore_case else []
    said = await _compile([*flags, "--regexp", pattern])
    if said is not None:
        raise InvalidArguments(
            f"The pattern {pattern!r} is not a valid regular expression (ripgrep's Rust "
            f"syntax: no look-around, no backreferences): {said}. Escape special characters "
            "such as ( [ { . * + ? with a backslash."
        )


async def check_glob(glob: str, shown: str) -> None:
    """``invalid_arguments`` with ripgrep's own message if it cannot compile
    ``glob``; ``shown`` is the pattern as the model wrote it."""
    said = await _compile(["--glob", glob, "--regexp", "x"])
    if said is not None:
        raise InvalidArguments(f"The glob pattern {shown!r} is not valid: {said}.")


async def _compile(args: list[str]) -> str | None:
    """Run ``rg`` with ``args`` on ``/dev/null`` (a path given explicitly,
    which globs do not filter): what it says if it refuses them."""
    result = await anyio.run_process(
        [rg_binary(), "--no-config", *args, "--", os.devnull],
        stdin=subprocess.DEVNULL,
        check=False,
    )
    if result.returncode != 2:
        return None
    said = result.stderr.decode("utf-8", "replace").strip().removeprefix("rg: ")
    return said[: _STDERR_CHARS * 4]


@dataclass
class Outcome:
    """How a run ended: ``stopped`` when the consumer had enough and ``rg``
    was killed; ``error`` the start of what ``rg`` said on a failure (an
    unreadable file), for a note."""

    stopped: bool
    error: str | None


async def run(
    args: list[str], *, target: Target, separator: bytes, take: Callable[[bytes], bool]
) -> Outcome:
    """Run ``rg`` in the target's directory (or on the target file) and hand
    each output record (split on ``separator``) to ``take`` until it
    returns ``False``; then ``rg`` is killed."""
    cwd = target.fd_path if target.is_dir else None
    path = "." if target.is_dir else target.fd_path
    argv = [rg_binary(), *args, "--", path]
    with tempfile.TemporaryFile(prefix="kun-rg-") as errors, _pipe() as (read_fd, write_fd):
        try:
            guarded = await spawn_guarded(
                argv, cwd=cwd, stdout=write_fd, stderr=errors.fileno(), pass_fds=(target.fd,)
            )
        finally:
            os.close(write_fd)
        stopped = False
        try:
            stopped = not await _feed(read_fd, separator, take)
        finally:
            await guarded.close(kill=True)
        code = guarded.process.returncode
        if stopped or code in (0, 1):
            return Outcome(stopped=stopped, error=None)
        errors.seek(0)
        said = errors.read(_STDERR_CHARS * 4).decode("utf-8", "replace").strip()
        return Outcome(stopped=False, error=said.splitlines()[0][:_STDERR_CHARS] if said else None)


async def _feed(read_fd: int, separator: bytes, take: Callable[[bytes], bool]) -> bool:
    """Records from the pipe to ``take``; ``False`` once it wants no more. A
    record longer than :data:`MAX_RECORD_BYTES` is handed on cut there."""
    pending = bytearray()
    skipping = False
    while True:
        await anyio.wait_readable(read_fd)
        try:
            data = os.read(read_fd, _READ_SIZE)
        except BlockingIOError:
            continue
        if not data:
            break
        start = 0
        while (at := data.find(separator, start)) >= 0:
            if not skipping:
                pending += data[start:at]
                if not take(bytes(pending)):
                    return False
            pending.clear()
            skipping = False
            start = at + len(separator)
        if not skipping:
            pending += data[start:]
            if len(pending) > MAX_RECORD_BYTES:
                if not take(bytes(pending[:MAX_RECORD_BYTES])):
                    return False
                pending.clear()
                skipping = True
    return skipping or not pending or take(bytes(pending))


@contextmanager
def _pipe() -> Iterator[tuple[int, int]]:
    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)
    try:
        yield read_fd, write_fd
    finally:
        os.close(read_fd)


@cache
def _has_proc() -> bool:
    return os.path.isdir("/proc/self/fd")
