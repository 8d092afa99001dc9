"""The sandbox the model's commands run in: bubblewrap (``bwrap``) on Linux.

Without it a command runs with the user's full rights: it can write
anywhere, read ``~/.ssh`` and kun's own home (the logs of every thread),
reach the network, read ``/proc/<kun's pid>/environ`` and call kun's own
loopback API. Inside it (:func:`bwrap_argv`):

* the whole filesystem is read-only (``--ro-bind / /``) but the workspace,
  a private ``/tmp`` (``TMPDIR`` points there, wherever it pointed) and the
  paths of ``[tools.bash] writable``;
* the git metadata (:func:`git_metadata`) of the workspace and of each
  ``writable`` path is read-only: its hooks and configuration run, later,
  outside the sandbox (the user's next ``git``), so a command must not
  plant them; naming it in ``writable`` re-opens it;
* kun's home, the configuration file in use when it lies outside the
  workspace, the user's secret places (:data:`SECRET_PLACES` under ``~``)
  and the sockets that act outside the sandbox (:data:`SYSTEM_SOCKETS`)
  are hidden: an empty directory (or an empty file) over each;
* the network is off (``--unshare-net``: only a loopback of its own, where
  nothing listens) unless ``network`` is on;
* the command gets a PID namespace and a ``/proc`` of its own, so no other
  process (kun's included) is visible, and everything it leaves behind is
  killed when it ends (``--die-with-parent`` covers kun's own death);
* ``--new-session``: it cannot push keystrokes into kun's terminal.

Mounts are applied parents first (:func:`_mounts`), so the workspace stays
writable inside a hidden home or ``/tmp``, and a home inside the workspace
stays hidden.

Whether a call runs sandboxed is decided in one place,
:meth:`SandboxSettings.policy_for`: ``on`` always, ``off`` never, ``auto``
when the approval policy runs commands without asking the user first (a
user who approves each command sees it; ``kun serve`` turns ``auto`` into
``on``). Where the sandbox is wanted but ``bwrap`` is missing or cannot
start, :func:`probe` says so in one line: a call is refused, never run
unsandboxed.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Literal

from kun.contracts.threads import ApprovalPolicy
from kun.errors import UserMistake
from kun.tools.approval import decide

__all__ = [
    "SECRET_PLACES",
    "SYSTEM_SOCKETS",
    "SandboxMode",
    "SandboxPolicy",
    "SandboxSettings",
    "SandboxUnavailable",
    "bwrap_argv",
    "denial",
    "git_metadata",
    "probe",
]

SandboxMode = Literal["auto", "on", "off"]

SECRET_PLACES = (
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".kube",
    ".docker",
    ".password-store",
    ".config/gcloud",
    ".config/gh",
    ".config/hub",
    ".local/share/keyrings",
    ".netrc",
    ".git-credentials",
    ".pypirc",
    ".npmrc",
    ".cargo/credentials.toml",
)
"""Under the user's home: what the sandbox hides (those that exist)."""

SYSTEM_SOCKETS = (
    "/run/user/{uid}",
    "/run/docker.sock",
    "/var/run/docker.sock",
    "/run/containerd",
    "/run/podman",
    "/run/dbus",
)
"""Also hidden (those that exist): sockets that do things outside the
sandbox for whoever connects (a path socket needs no network): the user's
runtime directory (the session bus, through which ``systemd-run --user``
starts anything; agent sockets), the container daemons (root), the system
bus."""

OPT_OUT = (
    'turn the sandbox off with [tools.bash] sandbox = "off" in the kun.toml of kun\'s home '
    "or one named with --config (dangerous: commands then run with your full rights)"
)
HOW_TO_FIX = f"install bubblewrap (apt-get install bubblewrap) or {OPT_OUT}"
NOT_LINUX = "the sandbox needs Linux's bubblewrap (bwrap), and this system is {platform}: {opt_out}"


class SandboxUnavailable(UserMistake):
    """The sandbox is wanted but ``bwrap`` is missing or cannot start here."""


@dataclass(frozen=True, slots=True)
class SandboxPolicy:
    """One sandboxed run: ``workspace`` and ``writable`` are writable,
    ``hidden`` are hidden, ``read_only`` stay read-only inside a writable
    path, the network is on only if ``network``."""

    workspace: Path
    writable: tuple[Path, ...] = ()
    hidden: tuple[Path, ...] = ()
    network: bool = False
    read_only: tuple[Path, ...] = ()


@dataclass(frozen=True, slots=True)
class SandboxSettings:
    """``[tools.bash] sandbox``, ``writable`` and ``network``, and what to
    hide (kun's home, the configuration file): everything but the call."""

    mode: SandboxMode = "auto"
    writable: tuple[Path, ...] = ()
    network: bool = False
    hidden: tuple[Path, ...] = ()

    def wanted(self, policy: ApprovalPolicy | None) -> bool:
        """Whether a command run under ``policy`` runs sandboxed (``None``:
        a call without a thread, which the user runs by hand)."""
        if self.mode != "auto":
            return self.mode == "on"
        return policy is not None and decide(policy, "exec") == "allow"

    def policy_for(self, workspace: Path, policy: ApprovalPolicy | None) -> SandboxPolicy | None:
        """The sandbox of a call in ``workspace`` under ``policy``; ``None``:
        it runs unsandboxed."""
        if not self.wanted(policy):
            return None
        hidden = (*self.hidden, *_secret_places(Path.home()), *_system_sockets())
        project = tuple(path for path in hidden if _project_file(path, workspace))
        writable = tuple(workspace / path.expanduser() for path in self.writable)
        repositories = (path for root in (workspace, *writable) for path in git_metadata(root))
        git = tuple(
            path
            for path in repositories
            if not _reopened(path, writable) and not _within(path, self.hidden)
        )
        return SandboxPolicy(
            workspace=workspace,
            writable=writable,
            hidden=tuple(path for path in hidden if path not in project),
            network=self.network,
            read_only=(*project, *git),
        )


def git_metadata(workspace: Path) -> tuple[Path, ...]:
    """What of the workspace's own repository stays read-only in the
    sandbox: its ``.git`` (a directory, or in a worktree the file naming
    the git directory, then that directory and the common one too), and the
    ``.git`` of each submodule ``.gitmodules`` lists (their git directories
    are under ``.git/modules``). A read-only mount is also a mount point,
    which cannot be renamed or removed, so a command cannot swap in a
    ``.git`` of its own either. Other nested repositories are not looked
    for (a walk of the whole workspace per call would cost too much)."""
    paths = [*_repository(workspace)]
    if paths:
        for submodule in _submodules(workspace):
            paths += _repository(workspace / submodule)
    return tuple(dict.fromkeys(path for path in paths if path.exists()))


def _repository(folder: Path) -> list[Path]:
    dot_git = folder / ".git"
    if dot_git.is_dir():
        return [dot_git]
    if not dot_git.is_file():
        return []
    try:
        named = dot_git.read_text(errors="replace").strip()
    except OSError:
        return [dot_git]
    if not named.startswith("gitdir:"):
        return [dot_git]
    gitdir = (folder / named.removeprefix("gitdir:").strip()).resolve()
    try:
        common = (gitdir / (gitdir / "commondir").read_text().strip()).resolve()
    except OSError:
        return [dot_git, gitdir]
    return [dot_git, gitdir, common]


_SUBMODULE_PATH = re.compile(r"^\s*path\s*=\s*(.+?)\s*$", re.MULTILINE)


def _submodules(workspace: Path) -> list[str]:
    try:
        text = (workspace / ".gitmodules").read_text(errors="replace")
    except OSError:
        return []
    paths = [match.group(1).strip('"') for match in _SUBMODULE_PATH.finditer(text)]
    return [path for path in paths if not Path(path).is_absolute() and ".." not in Path(path).parts]


def _within(path: Path, places: tuple[Path, ...]) -> bool:
    """Whether ``path`` is in one of ``places`` (hidden: a read-only mount
    there would show it again)."""
    return any(_real(path).is_relative_to(_real(place)) for place in places)


def _reopened(path: Path, writable: tuple[Path, ...]) -> bool:
    """Whether ``writable`` names ``path`` itself (``.git``: for a model
    that is to commit). A writable directory around it does not re-open it;
    one inside it is writable anyway (mounted after it)."""
    return any(_real(path) == _real(place) for place in writable)


def _project_file(path: Path, workspace: Path) -> bool:
    """A file to hide that is inside the workspace (its ``kun.toml``) is
    the project's: readable (an empty file over it would look emptied to
    ``git add -A``), but read-only, so a command cannot turn the sandbox
    off for the next run."""
    return path.is_file() and _real(path).is_relative_to(_real(workspace))


def _secret_places(home: Path) -> tuple[Path, ...]:
    return tuple(home / place for place in SECRET_PLACES)


def _system_sockets() -> tuple[Path, ...]:
    return tuple(Path(place.format(uid=os.getuid())) for place in SYSTEM_SOCKETS)


def bwrap_argv(bwrap: str, policy: SandboxPolicy, argv: Sequence[str]) -> list[str]:
    """``argv`` run by ``bwrap`` under ``policy``, in the workspace."""
    options = [
        "--ro-bind", "/", "/",
        "--dev", "/dev",
        "--proc", "/proc",
        "--unshare-pid", "--unshare-ipc", "--unshare-uts",
        "--die-with-parent", "--new-session",
        "--setenv", "TMPDIR", "/tmp",
    ]  # fmt: skip
    if not policy.network:
        options.append("--unshare-net")
    for path, kind in _mounts(policy):
        if kind == "write":
            options += ["--bind", str(path), str(path)]
        elif kind == "tmpfs":
            options += ["--tmpfs", str(path)]
        elif kind == "read_only":
            options += ["--ro-bind", str(path), str(path)]
        else:
            options += ["--ro-bind", os.devnull, str(path)]
    workspace = str(_real(policy.workspace))
    return [bwrap, *options, "--chdir", workspace, "--", *argv]


MountKind = Literal["write", "tmpfs", "empty_file", "read_only"]


def _mounts(policy: SandboxPolicy) -> list[tuple[Path, MountKind]]:
    """What goes over the read-only root, parents before children (a later
    mount covers an earlier one): ``/tmp`` first, then the hidden places and
    the writable ones by depth, a writable path winning over a hidden one of
    the same depth. Paths that do not exist are left out (there is nothing
    to hide, and no mount point to put a hidden place on)."""
    mounts: list[tuple[Path, MountKind]] = [(Path("/tmp"), "tmpfs")]
    for path in {_real(p) for p in policy.hidden}:
        if path.is_dir():
            mounts.append((path, "tmpfs"))
        elif path.exists():
            mounts.append((path, "empty_file"))
    for path in {_real(p) for p in (policy.workspace, *policy.writable)}:
        if path.exists():
            mounts.append((path, "write"))
    mounts += [(path, "read_only") for path in {_real(p) for p in policy.read_only}]
    mounts.sort(key=lambda mount: (len(mount[0].parts), mount[1] == "write", str(mount[0])))
    return mounts


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path.expanduser()))


_PROBE_TIMEOUT_S = 10.0


@cache
def _probe(path_variable: str, platform: str) -> tuple[str | None, str | None]:
    if not platform.startswith("linux"):
        return None, NOT_LINUX.format(platform=platform, opt_out=OPT_OUT)
    bwrap = shutil.which("bwrap", path=path_variable)
    if bwrap is None:
        return None, f"the sandbox needs bubblewrap, and bwrap is not installed: {HOW_TO_FIX}"
    argv = bwrap_argv(bwrap, SandboxPolicy(workspace=Path(tempfile.gettempdir())), ["true"])
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=_PROBE_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"the sandbox cannot start ({bwrap}: {exc}): {HOW_TO_FIX}"
    if done.returncode != 0:
        said = " ".join(done.stderr.split())[:200] or f"exit status {done.returncode}"
        return None, (
            f"the sandbox cannot start ({said}; user namespaces may be off here): {HOW_TO_FIX}"
        )
    return bwrap, None


def probe(platform: str = sys.platform) -> str:
    """The path of a ``bwrap`` that starts a sandbox here, found on
    ``PATH`` and tried once (the answer is kept per ``PATH``). Raises
    :class:`SandboxUnavailable`, one line saying how to install it or opt
    out, when there is none (on a system that is not Linux, ``platform``,
    there is none). Blocking: it may run ``bwrap`` once."""
    bwrap, problem = _probe(os.environ.get("PATH", os.defpath), platform)
    if bwrap is None:
        raise SandboxUnavailable(problem or HOW_TO_FIX)
    return bwrap


_READ_ONLY = re.compile(r"read-only file system", re.IGNORECASE)
_GIT_METADATA = re.compile(r"\.git\b")
_BUSY = re.compile(r"device or resource busy", re.IGNORECASE)
_OFFLINE = re.compile(
    r"network is unreachable|connection refused|could not resolve|name resolution"
    r"|name or service not known|no address associated|temporary failure in name"
    r"|couldn't connect to server|failed to establish a new connection",
    re.IGNORECASE,
)


def denial(output: str, policy: SandboxPolicy) -> str | None:
    """What the sandbox probably refused, judged from the output of a
    command run under ``policy``, whatever its exit code (``a; b`` exits as
    ``b`` did), with what to do instead; ``None`` when nothing points at
    it. (A guess by design: the command's own messages are all there is.)"""
    reasons = []
    refused = _READ_ONLY.search(output) or _BUSY.search(output)
    protected = sorted({p.name for p in policy.read_only if p.name in output})
    if refused and policy.read_only and _GIT_METADATA.search(output):
        reasons.append(
            ".git is read-only (its hooks and config would run outside the sandbox): "
            "leave commits to the user"
        )
    elif refused and protected:
        reasons.append(
            f"{', '.join(protected)} is read-only and cannot be moved or removed (kun's "
            "settings are the user's to change)"
        )
    elif _READ_ONLY.search(output):
        reasons.append(
            "all is read-only but the workspace, /tmp and [tools.bash] writable: install "
            "into the workspace (python -m venv .venv, npm install without -g)"
        )
    if not policy.network and _OFFLINE.search(output):
        reasons.append("the network is off")
    hidden = sorted(str(p) for p in policy.hidden if str(p) in output)
    if hidden:
        reasons.append(f"{', '.join(hidden)} hidden (empty in the sandbox)")
    return "; ".join(reasons) or None
