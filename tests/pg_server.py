"""A throwaway PostgreSQL server for the tests that need one.

Debian's ``postgresql`` package: ``initdb`` a cluster in a temporary
directory, ``pg_ctl start`` it on a free loopback port (its socket in the
same directory), ``pg_ctl stop -m fast`` and remove the directory at the end.
The binaries are looked up on ``PATH``, then under
``/usr/lib/postgresql/*/bin`` (the newest first). ``initdb`` refuses to run
as root, so as root the server runs as an unprivileged user (``postgres``
when the package created it, else ``nobody``) that owns the directory.

The cluster is for tests only: trust authentication on loopback, and
(unless a benchmark asks otherwise) nothing is fsynced.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

__all__ = ["PgServer", "find_binary", "start_server"]

PG_LIB = Path("/usr/lib/postgresql")
USER = "kun"
START_ATTEMPTS = 3
SETTINGS = ("listen_addresses=127.0.0.1", "max_connections=200")
UNSAFE = ("fsync=off", "synchronous_commit=off", "full_page_writes=off")
"""For tests: nothing reaches the disk for sure (a benchmark keeps the defaults)."""


class PgServer:
    """A running throwaway server; :meth:`stop` stops it and removes its files."""

    def __init__(self, root: Path, bin_dir: Path, port: int, run_as: Sequence[str]) -> None:
        self.root = root
        self.bin_dir = bin_dir
        self.port = port
        self.run_as = list(run_as)
        self.url = f"postgresql://{USER}@127.0.0.1:{port}/postgres"

    @property
    def data(self) -> Path:
        return self.root / "data"

    def database_url(self, name: str) -> str:
        return f"postgresql://{USER}@127.0.0.1:{self.port}/{name}"

    def stop(self) -> None:
        try:
            pg_ctl = str(self.bin_dir / "pg_ctl")
            _run([*self.run_as, pg_ctl, "-D", str(self.data), "-m", "fast", "-w", "stop"])
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


def find_binary(name: str) -> Path | None:
    """``name`` on ``PATH`` (where Debian links it from
    ``/usr/lib/postgresql/<version>/bin``, which is then where the others
    are too), else in the newest ``/usr/lib/postgresql/*/bin``."""
    found = shutil.which(name)
    if found is not None:
        return Path(found).resolve()
    versions = sorted(
        PG_LIB.glob("*/bin"),
        key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0,
        reverse=True,
    )
    for bin_dir in versions:
        if (bin_dir / name).is_file():
            return bin_dir / name
    return None


def start_server(*, durable: bool = False) -> PgServer:
    """Create a cluster in a new temporary directory and start it; raise
    ``RuntimeError`` (saying why) when that fails. ``FileNotFoundError``
    when there is no ``initdb``. ``durable``: fsync as a real server does
    (for benchmarks), else :data:`UNSAFE`."""
    initdb = find_binary("initdb")
    if initdb is None:
        raise FileNotFoundError("initdb")
    bin_dir = initdb.parent
    if not (bin_dir / "pg_ctl").is_file():
        raise FileNotFoundError(str(bin_dir / "pg_ctl"))
    root = Path(tempfile.mkdtemp(prefix="kun-pg-"))
    try:
        run_as = _unprivileged(root)
        command = [*run_as, str(initdb), "-D", str(root / "data"), "-U", USER]
        _run([*command, "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync"])
        return _start(root, bin_dir, run_as, SETTINGS if durable else SETTINGS + UNSAFE)
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise


def _start(root: Path, bin_dir: Path, run_as: list[str], settings: Sequence[str]) -> PgServer:
    """``pg_ctl start`` on a free port; another process may take the port
    between the probe and the start, so a failed start is tried again on
    another one."""
    failure: RuntimeError | None = None
    for _ in range(START_ATTEMPTS):
        port = _free_port()
        options = " ".join([f"-p {port}", f"-k {root}", *(f"-c {s}" for s in settings)])
        command = [*run_as, str(bin_dir / "pg_ctl"), "-D", str(root / "data")]
        command += ["-o", options, "-l", str(root / "server.log"), "-w", "start"]
        try:
            _run(command)
        except RuntimeError as exc:
            failure = exc
            continue
        return PgServer(root, bin_dir, port, run_as)
    assert failure is not None
    log = root / "server.log"
    tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
    raise RuntimeError(f"{failure}\nserver log:\n{tail}")


def _unprivileged(root: Path) -> list[str]:
    """The command prefix that runs the server's programs: none for an
    ordinary user; as root, ``setpriv`` to an unprivileged user, who is
    given ``root``."""
    if os.getuid() != 0:
        return []
    for name in ("postgres", "nobody"):
        try:
            user = pwd.getpwnam(name)
        except KeyError:
            continue
        os.chown(root, user.pw_uid, user.pw_gid)
        return ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups"]
    raise RuntimeError("running as root and no unprivileged user (postgres, nobody) to run as")


def _run(command: list[str]) -> None:
    done = subprocess.run(
        command, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120
    )
    if done.returncode != 0:
        output = (done.stdout + done.stderr).strip()[-2000:]
        raise RuntimeError(f"{' '.join(command)} failed ({done.returncode}): {output}")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port
