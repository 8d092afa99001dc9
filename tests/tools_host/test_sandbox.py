"""bash under bubblewrap (kun.tools.sandbox), with the real ``bwrap``: what
fails inside the sandbox works with it off, the workspace stays writable,
``writable`` and ``network`` widen it, and a missing ``bwrap`` refuses
the call instead of running it unsandboxed."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from kun.contracts.threads import ApprovalPolicy
from kun.tools import ToolContext, ToolOutput
from kun.tools.builtin.bash import Bash
from kun.tools.sandbox import (
    SandboxPolicy,
    SandboxSettings,
    bwrap_argv,
    denial,
    git_metadata,
)

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed"),
]

ON = SandboxSettings(mode="on")
OFF = SandboxSettings(mode="off")


@pytest.fixture
def outside() -> Iterator[Path]:
    """A directory outside the workspace and outside ``/tmp`` (the sandbox
    has a ``/tmp`` of its own, so a path there is simply absent)."""
    path = Path(tempfile.mkdtemp(prefix="kun-sandbox-test-", dir="/var/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


async def bash(
    workspace: Path,
    command: str,
    settings: SandboxSettings = ON,
    policy: ApprovalPolicy | None = "full-auto",
    timeout_s: float | None = None,
) -> ToolOutput:
    ctx = ToolContext(
        workspace=workspace, thread_id="t1", turn_id="u1", call_id="c1", approval_policy=policy
    )
    args: dict[str, object] = {"command": command}
    if timeout_s is not None:
        args["timeout_s"] = timeout_s
    return await Bash(sandbox=settings).run(args, ctx)


def exit_code(result: ToolOutput) -> int:
    return int(result.output.rsplit("[exit code: ", 1)[1].rstrip("]"))


async def test_the_workspace_is_writable(ws: Path) -> None:
    result = await bash(ws, "echo made > made.txt && mkdir -p sub && echo deep > sub/f")
    assert exit_code(result) == 0, result.output
    assert (ws / "made.txt").read_text() == "made\n"
    assert (ws / "sub" / "f").read_text() == "deep\n"


async def test_a_write_outside_the_workspace_fails_sandboxed_and_works_off(
    ws: Path, outside: Path
) -> None:
    target = outside / "escaped.txt"
    command = f"echo out > {target}"
    refused = await bash(ws, command)
    assert exit_code(refused) != 0
    assert not target.exists()
    assert "Read-only file system" in refused.output
    assert "[sandbox_denied:" in refused.output
    assert not refused.is_error  # a result the model reads, not a crash

    allowed = await bash(ws, command, OFF)
    assert exit_code(allowed) == 0
    assert target.read_text() == "out\n"


async def test_writable_widens_the_sandbox(ws: Path, outside: Path) -> None:
    widened = SandboxSettings(mode="on", writable=(outside,))
    result = await bash(ws, f"echo ok > {outside}/widened.txt", widened)
    assert exit_code(result) == 0, result.output
    assert (outside / "widened.txt").read_text() == "ok\n"


async def test_tmpdir_is_the_private_tmp(
    ws: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMPDIR", str(outside))
    result = await bash(ws, 'f=$(mktemp) && echo "made $f"')
    assert exit_code(result) == 0, result.output
    assert "made /tmp/" in result.output


async def test_a_private_tmp(ws: Path) -> None:
    marker = Path(tempfile.gettempdir()) / "kun-sandbox-private-tmp-marker"
    marker.write_text("host\n")
    try:
        result = await bash(ws, f"cat {marker}; echo inside > {marker}; cat {marker}")
        assert "host" not in result.output
        assert "inside" in result.output
        assert marker.read_text() == "host\n"
    finally:
        marker.unlink()


async def test_a_hidden_file_is_unreadable_sandboxed_and_readable_off(
    ws: Path, outside: Path
) -> None:
    secret_dir = outside / "kun-home"
    secret_dir.mkdir()
    (secret_dir / "secret.txt").write_text("the-secret\n")
    hidden = SandboxSettings(mode="on", hidden=(secret_dir,))
    command = f"cat {secret_dir}/secret.txt"

    refused = await bash(ws, command, hidden)
    assert "the-secret" not in refused.output
    assert exit_code(refused) != 0
    assert (
        f"[sandbox_denied: this command ran in kun's sandbox, which forbids it: {secret_dir}"
        in (refused.output)
    )

    allowed = await bash(ws, command, SandboxSettings(mode="off", hidden=(secret_dir,)))
    assert "the-secret" in allowed.output


async def test_the_users_secret_places_are_hidden(
    ws: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (outside / ".ssh").mkdir()
    (outside / ".ssh" / "id_ed25519").write_text("PRIVATE KEY\n")
    (outside / ".netrc").write_text("machine x password hunter2\n")
    (outside / "notes.txt").write_text("ordinary\n")
    monkeypatch.setenv("HOME", str(outside))
    command = "cat ~/notes.txt ~/.ssh/id_ed25519 ~/.netrc"

    refused = await bash(ws, command)
    assert "ordinary" in refused.output
    assert "PRIVATE KEY" not in refused.output
    assert "hunter2" not in refused.output

    allowed = await bash(ws, command, OFF)
    assert "PRIVATE KEY" in allowed.output
    assert "hunter2" in allowed.output


async def test_the_workspace_stays_writable_inside_a_hidden_home(outside: Path) -> None:
    home = outside / "home"
    workspace = home / "ws"
    workspace.mkdir(parents=True)
    (home / "secret.txt").write_text("the-secret\n")
    settings = SandboxSettings(mode="on", hidden=(home,))
    result = await bash(workspace, f"echo w > w.txt; cat {home}/secret.txt", settings)
    assert (workspace / "w.txt").read_text() == "w\n"
    assert "the-secret" not in result.output


async def test_a_home_inside_the_workspace_stays_hidden(ws: Path) -> None:
    home = ws / ".kun"
    home.mkdir()
    (home / "secret.txt").write_text("the-secret\n")
    settings = SandboxSettings(mode="on", hidden=(home,))
    result = await bash(ws, "cat .kun/secret.txt; echo w > w.txt", settings)
    assert "the-secret" not in result.output
    assert (ws / "w.txt").read_text() == "w\n"


async def test_a_hidden_unix_socket_cannot_be_reached(ws: Path, outside: Path) -> None:
    """A path socket needs no network: the session bus or docker's would
    run anything outside the sandbox, so the sandbox hides them."""
    path = outside / "agent.sock"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        server.listen()
        command = (
            f"{sys.executable} -c 'import socket; s = socket.socket(socket.AF_UNIX); "
            f's.connect("{path}"); print("connected")\''
        )
        refused = await bash(ws, command, SandboxSettings(mode="on", hidden=(path,)))
        assert "connected" not in refused.output
        allowed = await bash(ws, command, SandboxSettings(mode="off", hidden=(path,)))
        assert "connected" in allowed.output


def test_the_sandbox_hides_the_sockets_that_act_outside_it(tmp_path: Path) -> None:
    policy = SandboxSettings(mode="on").policy_for(tmp_path, None)
    assert policy is not None
    assert Path(f"/run/user/{os.getuid()}") in policy.hidden
    assert Path("/var/run/docker.sock") in policy.hidden
    assert Path.home() / ".ssh" in policy.hidden


async def test_the_projects_kun_toml_is_readable_but_read_only(ws: Path) -> None:
    config = ws / "kun.toml"
    config.write_text('[tools.bash]\nsandbox = "on"\n')
    settings = SandboxSettings(mode="on", hidden=(config,))
    result = await bash(ws, "cat kun.toml; echo 'sandbox = \"off\"' > kun.toml", settings)
    assert 'sandbox = "on"' in result.output
    assert "Read-only file system" in result.output
    assert config.read_text() == '[tools.bash]\nsandbox = "on"\n'


@pytest.fixture
def listener() -> Iterator[int]:
    """A port on 127.0.0.1 that accepts connections (as ``kun serve`` would)."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        yield server.getsockname()[1]


async def test_a_loopback_connection_fails_sandboxed_and_works_off(ws: Path, listener: int) -> None:
    command = f"exec 3<>/dev/tcp/127.0.0.1/{listener} && echo connected"
    refused = await bash(ws, command)
    assert "connected" not in refused.output.replace("[sandbox_denied", "")
    assert exit_code(refused) != 0
    assert "the network is off" in refused.output

    allowed = await bash(ws, command, OFF)
    assert "connected" in allowed.output

    networked = await bash(ws, command, SandboxSettings(mode="on", network=True))
    assert "connected" in networked.output


def running(marker: str) -> bool:
    """Whether a live process has ``marker`` in its command line."""
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes()
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in cmdline and state != "Z":
            return True
    return False


async def gone(marker: str) -> bool:
    """Whether the process is gone; it is killed as the sandbox ends, which
    the call's return may precede by a moment, so wait for it (bounded)."""
    for _ in range(500):
        if not running(marker):
            return True
        await anyio.sleep(0.02)
    return False


async def test_a_background_process_dies_with_the_call_sandboxed_and_outlives_it_off(
    ws: Path,
) -> None:
    sandboxed_marker, off_marker = "4242.1717", "4242.1818"
    started = await bash(ws, f"sleep {sandboxed_marker} > /dev/null 2>&1 & echo started")
    assert "started" in started.output
    assert await gone(sandboxed_marker)

    await bash(ws, f"sleep {off_marker} > /dev/null 2>&1 & echo started", OFF)
    try:
        assert running(off_marker)
    finally:
        await bash(ws, f"pkill -f 'sleep {off_marker}'", OFF)


async def test_a_timeout_kills_the_sandboxed_command(ws: Path) -> None:
    marker = "4242.1919"
    result = await bash(ws, f"sleep {marker}", timeout_s=0.5)
    assert result.code == "timeout"
    assert await gone(marker)


async def test_auto_sandboxes_only_what_runs_without_asking(ws: Path, outside: Path) -> None:
    auto = SandboxSettings(mode="auto")
    command = f"echo x > {outside}/auto.txt"
    refused = await bash(ws, command, auto, policy="full-auto")
    assert not (outside / "auto.txt").exists()
    assert "[sandbox_denied:" in refused.output
    await bash(ws, command, auto, policy="on-request")  # the user approved it
    assert (outside / "auto.txt").exists()


def test_auto_wants_the_sandbox_where_commands_run_unasked() -> None:
    auto = SandboxSettings()
    assert auto.wanted("full-auto")
    for policy in ("on-request", "untrusted", "always", "auto", "never"):
        assert not auto.wanted(policy)  # type: ignore[arg-type]
    assert not auto.wanted(None)
    assert SandboxSettings(mode="on").wanted("on-request")
    assert not SandboxSettings(mode="off").wanted("full-auto")


def write_script(directory: Path, name: str, body: str) -> None:
    script = directory / name
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(0o755)


async def test_a_missing_bwrap_refuses_the_call_instead_of_running_it(
    ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    write_script(bin_dir, "bash", f'exec {shutil.which("bash")} "$@"')
    monkeypatch.setenv("PATH", str(bin_dir))
    result = await bash(ws, "echo ran > ran.txt")
    assert result.is_error
    assert result.code == "sandbox_unavailable"
    assert "apt-get install bubblewrap" in result.output
    assert 'sandbox = "off"' in result.output
    assert not (ws / "ran.txt").exists()


async def test_a_bwrap_that_cannot_start_refuses_the_call(
    ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    write_script(
        bin_dir, "bwrap", 'echo "bwrap: No permissions to creating new namespace" >&2; exit 1'
    )
    write_script(bin_dir, "bash", f'exec {shutil.which("bash")} "$@"')
    monkeypatch.setenv("PATH", str(bin_dir))
    result = await bash(ws, "echo ran > ran.txt")
    assert result.code == "sandbox_unavailable"
    assert "No permissions to creating new namespace" in result.output
    assert "user namespaces" in result.output
    assert not (ws / "ran.txt").exists()


def test_denial_names_what_the_sandbox_forbade(tmp_path: Path) -> None:
    policy = SandboxPolicy(workspace=tmp_path, hidden=(Path("/home/u/.ssh"),))
    assert denial("grep: nothing here\n", policy) is None
    assert "read-only" in (denial("touch: cannot touch '/x': Read-only file system", policy) or "")
    assert "network is off" in (denial("curl: (6) Could not resolve host: x", policy) or "")
    assert (
        denial("curl: (6) Could not resolve host: x", SandboxPolicy(tmp_path, network=True)) is None
    )
    assert "/home/u/.ssh" in (denial("cat: /home/u/.ssh/id: No such file", policy) or "")
    guarded = SandboxPolicy(workspace=tmp_path, read_only=(tmp_path / "kun.toml",))
    for said in (
        "sh: 1: cannot create kun.toml: Read-only file system",
        "mv: cannot move 'kun.toml' to 'k2': Device or resource busy",
    ):
        note = denial(said, guarded) or ""
        assert "kun.toml is read-only and cannot be moved" in note, said
        assert "all is read-only but the workspace" not in note


def test_mounts_go_parents_first(tmp_path: Path) -> None:
    home = tmp_path / "home"
    workspace = home / "ws"
    workspace.mkdir(parents=True)
    argv = bwrap_argv("bwrap", SandboxPolicy(workspace=workspace, hidden=(home,)), ["true"])
    assert argv.index("--tmpfs") < argv.index(str(home)) < argv.index("--bind")
    assert argv[argv.index("--bind") + 1] == str(workspace.resolve())
    assert "--unshare-net" in argv
    assert "--unshare-net" not in bwrap_argv(
        "bwrap", SandboxPolicy(workspace=workspace, network=True), ["true"]
    )


SANDBOXED_RUNNER = """
import sys
from pathlib import Path

import anyio

from kun.tools import ToolContext
from kun.tools.builtin.bash import Bash
from kun.tools.sandbox import SandboxSettings

workspace = Path(sys.argv[1])
command = "sleep 4242.2121 & (sleep 4242.2222 & wait) & echo started > started; wait"
ctx = ToolContext(workspace=workspace, thread_id="t", turn_id="u", call_id="c")
anyio.run(Bash(sandbox=SandboxSettings(mode="on")).run, {"command": command}, ctx)
"""


async def test_sandboxed_processes_die_with_a_sigkilled_kun(ws: Path) -> None:
    markers = ("4242.2121", "4242.2222")
    process = await anyio.open_process([sys.executable, "-c", SANDBOXED_RUNNER, str(ws)])
    async with process:
        try:
            for _ in range(1500):
                if (ws / "started").exists() and all(running(m) for m in markers):
                    break
                await anyio.sleep(0.02)
            assert all(running(m) for m in markers)
            process.kill()
            await process.wait()
        finally:
            if process.returncode is None:
                process.kill()
        assert all([await gone(m) for m in markers])


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


GIT = "git -c user.name=t -c user.email=t@t"


@pytest.fixture
def repo(ws: Path) -> Path:
    git(ws, "init", "-q")
    (ws / "a.txt").write_text("a\n")
    git(ws, "add", "a.txt")
    git(ws, "commit", "-q", "-m", "first")
    return ws


async def test_a_command_cannot_plant_what_the_users_next_git_runs(repo: Path) -> None:
    """A hook, ``core.hooksPath``, ``core.fsmonitor`` or an alias run by
    the user's next ``git``, outside the sandbox: the repository's ``.git``
    is read-only, and cannot be moved aside for one of the command's own."""
    plant = (
        "echo 'touch /tmp/pwned' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit; "
        "git config core.hooksPath evil; git config core.fsmonitor 'touch /tmp/pwned'; "
        "mv .git .git-old; rm -rf .git; echo done"
    )
    config = (repo / ".git" / "config").read_text()
    result = await bash(repo, plant)
    assert not (repo / ".git" / "hooks" / "pre-commit").exists()
    assert (repo / ".git" / "config").read_text() == config
    assert not (repo / ".git-old").exists() and (repo / ".git" / "HEAD").is_file()
    assert "[sandbox_denied:" in result.output and ".git is read-only" in result.output
    off = await bash(repo, plant.replace("mv .git .git-old; rm -rf .git; ", ""), OFF)
    assert exit_code(off) == 0
    assert (repo / ".git" / "hooks" / "pre-commit").exists()


async def test_git_commit_is_refused_and_writable_dot_git_reopens_it(repo: Path) -> None:
    commit = f"echo b > b.txt && git add b.txt && {GIT} commit -q -m second"
    refused = await bash(repo, commit)
    assert exit_code(refused) != 0
    assert "Read-only file system" in refused.output
    assert "leave commits to the user" in refused.output
    assert (repo / "b.txt").read_text() == "b\n"  # the work tree stays writable
    reopened = await bash(repo, commit, SandboxSettings(mode="on", writable=(Path(".git"),)))
    assert exit_code(reopened) == 0, reopened.output
    assert git(repo, "log", "--format=%s").split() == ["second", "first"]


async def test_a_worktrees_git_file_and_git_directory_are_read_only(
    repo: Path, tmp_path: Path
) -> None:
    worktree = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", str(worktree))
    pointer = (worktree / ".git").read_text()
    gitdir = Path(pointer.removeprefix("gitdir:").strip())
    settings = SandboxSettings(mode="on", writable=(repo,))  # the main repository is writable
    result = await bash(
        worktree,
        f"echo 'gitdir: {tmp_path}/evil' > .git; echo x > {gitdir}/config.worktree; "
        f"echo x > {repo}/.git/hooks/post-checkout; echo made > made.txt",
        settings,
    )
    assert (worktree / ".git").read_text() == pointer
    assert not (gitdir / "config.worktree").exists()
    assert not (repo / ".git" / "hooks" / "post-checkout").exists()
    assert (worktree / "made.txt").exists(), result.output


def test_the_git_metadata_kept_read_only(repo: Path, tmp_path: Path) -> None:
    assert git_metadata(repo) == (repo / ".git",)
    assert git_metadata(tmp_path / "outside") == ()
    policy = SandboxSettings(mode="on", writable=(Path(".git"),)).policy_for(repo, None)
    assert policy is not None and repo / ".git" not in policy.read_only


def tiny_wheel(folder: Path) -> Path:
    wheel = folder / "tiny-0.1-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("tiny.py", "X = 1\n")
        archive.writestr(
            "tiny-0.1.dist-info/METADATA", "Metadata-Version: 2.1\nName: tiny\nVersion: 0.1\n"
        )
        archive.writestr(
            "tiny-0.1.dist-info/WHEEL",
            "Wheel-Version: 1.0\nGenerator: t\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        )
        archive.writestr("tiny-0.1.dist-info/RECORD", "")
    return wheel


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
async def test_the_notes_of_real_refusals_say_what_to_do(ws: Path, listener: int) -> None:
    """``curl`` to a host and to a local port with the network off."""
    for url in ("https://example.com", f"http://127.0.0.1:{listener}/"):
        result = await bash(ws, f"curl -sS {url}")
        assert "[sandbox_denied:" in result.output and "the network is off" in result.output


def system_pip() -> bool:
    if not Path(SYSTEM_PYTHON).is_file():
        return False
    done = subprocess.run([SYSTEM_PYTHON, "-m", "pip", "--version"], capture_output=True)
    return done.returncode == 0


SYSTEM_PYTHON = "/usr/bin/python3"


@pytest.mark.skipif(not system_pip(), reason="no system pip")
async def test_a_user_install_into_the_read_only_home_says_where_to_install(ws: Path) -> None:
    """``pip install --user`` writes under ``~``, read-only in the sandbox."""
    python = SYSTEM_PYTHON
    tiny_wheel(ws)
    result = await bash(
        ws,
        f"{python} -m pip install -q --user --break-system-packages --no-index --no-deps "
        "./tiny-0.1-py3-none-any.whl",
        SandboxSettings(mode="on", hidden=()),
    )
    assert "Read-only file system" in result.output
    assert "install into the workspace (python -m venv .venv" in result.output


async def test_a_submodules_git_file_is_read_only(repo: Path, tmp_path: Path) -> None:
    library = tmp_path / "library"
    library.mkdir()
    git(library, "init", "-q")
    git(library, "commit", "-q", "--allow-empty", "-m", "lib")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(library), "lib")
    pointer = (repo / "lib" / ".git").read_text()
    assert repo / "lib" / ".git" in git_metadata(repo)
    await bash(repo, f"echo 'gitdir: {tmp_path}/evil' > lib/.git; echo x > lib/new.txt")
    assert (repo / "lib" / ".git").read_text() == pointer
    assert (repo / "lib" / "new.txt").exists()


async def test_the_git_metadata_of_a_writable_path_is_read_only(ws: Path, outside: Path) -> None:
    git(outside, "init", "-q")
    settings = SandboxSettings(mode="on", writable=(outside,))
    result = await bash(
        ws, f"echo x > {outside}/made.txt; echo x > {outside}/.git/hooks/post-merge", settings
    )
    assert (outside / "made.txt").exists(), result.output
    assert not (outside / ".git" / "hooks" / "post-merge").exists()


def test_a_repository_in_a_hidden_place_stays_hidden(tmp_path: Path) -> None:
    """A worktree of a repository in kun's home: its git directories are
    not mounted back over the hidden home."""
    home = tmp_path / "home"
    main = home / "main"
    main.mkdir(parents=True)
    git(main, "init", "-q")
    git(main, "commit", "-q", "--allow-empty", "-m", "x")
    worktree = tmp_path / "wt"
    git(main, "worktree", "add", "-q", str(worktree))
    policy = SandboxSettings(mode="on", hidden=(home,)).policy_for(worktree, None)
    assert policy is not None
    assert policy.read_only == (worktree / ".git",)
