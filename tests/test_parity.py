"""One interface, two transports: every CLI command prints the same bytes
whether it works on the home here or on the same threads through a running
``kun serve`` (issue 20).

A home is built once with real ``kun`` commands over the loopback provider
(a tool-using thread, a second turn hidden by a rewind, a plain thread, a
fork, an import) and copied twice, byte for byte: ``kun serve`` holds one
copy, and the other is used in-process. The TABLE is then run in order on
each side, ``kun ARGS`` with ``$KUN_HOME`` the local copy, and ``kun
--server URL ARGS`` from a process whose own home is empty; each side's
model is a fake provider with the same script. Every row compares exit
status, stdout and stderr byte for byte, after normalising only what must
differ (:func:`normalised`):

- the ids of threads, turns and items created *during* the table (by
  ``fork``, ``import``, ``run``), numbered in order of appearance on each
  side (``<new1>``, ...);
  and their 12-character short form in a pasteable hint;
- the copy of the home in a path (``<home>``) and the server's URL in a
  pasteable hint (``kun --server URL ...`` reads ``kun ...``) or in the
  session's greeting (``kun · URL · model``): each names the way to reach
  the same thread from where the command ran;
- the time in a trash entry's name (each side ran at its own time), and in
  a session, the prompt's line drawn twice on one row (a redraw's timing).

A row that differs is marked ``xfail(strict=True)`` with the reason (none
does today): it turns into a failure the day it passes, so the mark must go
then.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pexpect
import pytest

from kun.ids import new_id
from kun.model.scripted import tool_reply
from kun.testing.fake_provider import FakeResponse
from tests.terminal_support import answer, plain, serve, write_config

pytestmark = pytest.mark.slow

START_SECONDS = 30.0
RUN_SECONDS = 120.0
READ_A = FakeResponse(chunks=tuple(tool_reply("read_file", {"path": "a.py"})))
IMPORTED = new_id("thr")
ID = re.compile(r"\b[a-z0-9]{1,32}_[0-9a-hjkmnp-tv-z]{14}(?:[0-9a-hjkmnp-tv-z]{12})?\b")
"""An id of :mod:`kun.ids`: thread-local (turns, items) or unique (threads)."""


@dataclass(frozen=True)
class Row:
    """``kun ARGS`` (``{NAME}`` is a thread the build or an earlier row
    named); ``keeps``: the name under which the new thread id this row
    prints (its stdout's first token, or ``thread ID`` on stderr) is kept."""

    args: tuple[str, ...]
    keeps: str | None = None
    differs: str | None = None

    @property
    def id(self) -> str:
        return " ".join(self.args)


def row(*args: str, keeps: str | None = None, differs: str | None = None) -> Row:
    return Row(args, keeps, differs)


TABLE = [
    row("threads"),
    row("threads", "--json"),
    row("threads", "--limit", "2"),
    row("threads", "--here"),
    row("threads", "--all"),
    row("usage", "{T1}"),
    row("usage", "{T1}", "{T2}"),
    row("usage", "{T1}", "--json"),
    row("replay", "{T1}"),
    row("replay", "{T1}", "--json"),
    row("replay", "{T1}", "--hidden"),
    row("replay", "{T1}", "--reasoning"),
    row("replay", "{T1}", "--until-seq", "5"),
    row("replay", "{T1}", "--from-seq", "5"),
    row("replay", "{T1}", "--strict"),
    row("replay", "{FORK}"),
    row("replay", "{IMP}"),
    row("rewind", "{T1}", "--undo"),
    row("replay", "{T1}"),
    row("rewind", "{T1}", "--before-turn", "2"),
    row("rewind", "{T1}", "--undo", "--files"),
    row("fork", "{T1}", "--at-turn", "1", keeps="F2"),
    row("fork", "{T1}", "--at-seq", "3", "--json"),
    row("fork", "{T2}", keeps="F3"),
    row("usage", "{T1}", "{F2}"),
    row("replay", "{F2}"),
    row("export", "{T2}", "-o", "parity.kun.tar.gz"),
    row("import", "parity.kun.tar.gz"),
    row("import", "parity.kun.tar.gz", "--as", "thr_parity0000000000000000000a", keeps="I2"),
    row("replay", "{I2}"),
    row("steer", "{T2}", "go on"),
    row("interrupt", "{T2}"),
    row("run", "hello", keeps="R1"),
    row("run", "--json", "--thread", "{T2}", "more"),
    row("run", "--thread", "{R1}", "again"),
    row("compact", "{T1}"),
    row("replay", "{T1}"),
    row("gc", "{T1}"),
    row("rm", "{F3}"),
    row("trash"),
    row("restore", "{F3}"),
    row("reconcile"),
    row("threads"),
    row("replay", "thr_nosuchthread"),
    row("usage", "{T1}", "thr_nosuchthread"),
    row("replay", "thr_"),
    row("fork", "thr_", "--at-turn", "1"),
    row("rewind", "{T2}", "--undo"),
    row("fork", "{T1}", "--at-turn", "99"),
    row("replay", "{T1}", "--until-seq", "100000"),
]
"""Every command, in the order it runs on each side (state carries over)."""

SCRIPT = [answer("hello back."), answer("more, then."), answer("again, then."), answer("summary.")]
"""The model's answers to the table's ``run`` rows and ``compact``."""


@dataclass
class Side:
    """Where one side runs its commands, and what it saw."""

    name: str
    home: Path
    command: list[str]
    env: dict[str, str]
    names: dict[str, str]
    results: list[tuple[int, str, str]] = field(default_factory=list)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _environ(**extra: str) -> dict[str, str]:
    dropped = ("KUN_SERVER", "KUN_TOKEN", "KUN_HOME", "KUN_CONFIG", "NO_COLOR")
    kept = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k not in dropped}
    return {**kept, "COLUMNS": "100", **extra}


def _kun(args: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, str, str]:
    done = subprocess.run(
        [sys.executable, "-m", "kun", *args],
        cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=RUN_SECONDS,
    )  # fmt: skip
    return done.returncode, done.stdout.decode(), done.stderr.decode()


def _thread_named(result: tuple[int, str, str]) -> str:
    """The new thread a command printed: ``thread ID ...`` on stderr
    (``run``), else the first thread id of stdout (``fork``, ``import``)."""
    code, out, err = result
    found = re.search(r"^thread (thr_\w+)", err, re.M) or re.search(r"thr_\w+", out)
    assert code == 0 and found is not None, result
    return found[1] if found.re.groups else found[0]


def _build(home: Path, workspace: Path, tmp: Path) -> dict[str, str]:
    """The threads both sides start from."""
    env = _environ(KUN_HOME=str(home))
    names: dict[str, str] = {}
    home.mkdir()
    script = [READ_A, answer("a.py prints a."), answer("nothing else."), answer("two.")]
    with serve(script) as provider:
        write_config(home, provider.base_url)
        names["T1"] = _thread_named(_kun(["run", "what does a.py print?"], workspace, env))
        _kun(["run", "--thread", names["T1"], "anything else?"], workspace, env)
        names["T2"] = _thread_named(_kun(["run", "second thread"], workspace, env))
    assert _kun(["rewind", names["T1"], "--before-turn", "2"], workspace, env)[0] == 0
    names["FORK"] = _thread_named(_kun(["fork", names["T1"], "--at-turn", "1"], workspace, env))
    bundle = tmp / "t2.kun.tar.gz"
    assert _kun(["export", names["T2"], "-o", str(bundle)], workspace, env)[0] == 0
    imported = _kun(["import", str(bundle), "--as", IMPORTED], workspace, env)
    assert imported[0] == 0, imported
    names["IMP"] = IMPORTED
    return names


def _run_table(side: Side, workspace: Path) -> None:
    for each in TABLE:
        args = [arg.format(**side.names) for arg in each.args]
        result = _kun([*side.command, *args], workspace, side.env)
        side.results.append(result)
        if each.keeps is not None:
            side.names[each.keeps] = _thread_named(result)
    (workspace / "parity.kun.tar.gz").unlink(missing_ok=True)


def _until_listening(process: subprocess.Popen[bytes], url: str) -> None:
    deadline = time.monotonic() + START_SECONDS
    while True:
        try:
            httpx.get(f"{url}/openapi.json")
            return
        except httpx.TransportError:
            assert process.poll() is None, "kun serve exited"
            assert time.monotonic() < deadline, "kun serve did not start"
            time.sleep(0.05)


@contextmanager
def _served(home: Path, log: Path) -> Iterator[str]:
    """``kun serve`` over ``home`` on 127.0.0.1; its URL."""
    port = _free_port()
    command = [sys.executable, "-m", "kun", "serve", "--port", str(port), "--home", str(home)]
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, env=_environ(), cwd=home.parent, stdin=subprocess.DEVNULL,
            stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        _until_listening(process, url)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@dataclass(frozen=True)
class Built:
    """The home both sides start from (copied for each comparison), the
    workspace its threads work in, and their names."""

    tmp: Path
    home: Path
    workspace: Path
    names: dict[str, str]
    known: frozenset[str]


@dataclass
class Ran:
    local: Side
    remote: Side
    known: frozenset[str]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    tmp = tmp_path_factory.mktemp("parity")
    workspace = tmp / "ws"
    workspace.mkdir()
    (workspace / "a.py").write_text("print('a')\n")
    home = tmp / "built"
    names = _build(home, workspace, tmp)
    known = frozenset(ID.findall(_all_logs(home))) | {"thr_nosuchthread"}
    return Built(tmp, home, workspace, names, known)


def on_both_sides(
    built: Built, tag: str, script: list[FakeResponse], run: Callable[[Side, Path], None]
) -> Ran:
    """``run`` on a copy of the built home here, then through ``kun serve``
    on another copy (from a process whose own home is empty); each side's
    model answers from ``script``."""
    local_home, server_home = built.tmp / f"{tag}-local", built.tmp / f"{tag}-served"
    client_home = built.tmp / f"{tag}-client"
    shutil.copytree(built.home, local_home)
    shutil.copytree(built.home, server_home)
    client_home.mkdir()
    local = Side("local", local_home, [], _environ(KUN_HOME=str(local_home)), dict(built.names))
    with serve(script) as provider:
        write_config(local_home, provider.base_url)
        run(local, built.workspace)
    with serve(script) as provider:
        write_config(server_home, provider.base_url)
        with _served(server_home, built.tmp / f"{tag}-serve.out") as url:
            remote = Side(
                "remote", server_home, ["--server", url],
                _environ(KUN_HOME=str(client_home)), dict(built.names),
            )  # fmt: skip
            run(remote, built.workspace)
    return Ran(local, remote, built.known)


@pytest.fixture(scope="module")
def ran(built: Built) -> Ran:
    """The table, run on both sides."""
    return on_both_sides(built, "table", SCRIPT, _run_table)


def _all_logs(home: Path) -> str:
    return "".join(path.read_text() for path in sorted(home.glob("threads/*/events.jsonl")))


def normalised(side: Side, text: str, known: frozenset[str], seen: dict[str, str]) -> str:
    """``text`` with what must differ between the sides replaced: ids made
    during the table (numbered in order of appearance, ``seen`` carries the
    numbering across the side's rows), the home's copy and the server's URL."""
    text = text.replace(str(side.home), "<home>")
    if side.command:
        text = text.replace(f"kun --server {side.command[1]} ", "kun ")
        text = text.replace(side.command[1], "<server>")
        text = text.replace("<server> · ", "")  # the session's greeting names its server

    def renamed(found: re.Match[str]) -> str:
        word = found[0]
        if word in known:
            return word
        return seen.setdefault(word, f"<new{len(seen) + 1}>")

    text = ID.sub(renamed, text)
    for word, name in seen.items():  # the short form a hint pastes (kun resume PREFIX)
        text = re.sub(rf"\b{re.escape(word[:12])}\b", name, text)
    text = re.sub(r'"at":\d+', '"at":<ms>', text)
    text = re.sub(r"\b\d{8}T\d{6}Z\b", "<stamp>", text)
    text = re.sub(r"\b\d{4}-\d\d-\d\d \d\d:\d\d\b", "<time>", text)
    return re.sub(r"\bin \d+\.\ds\b", "in <s>", text)


def _outputs(ran: Ran, side: Side) -> list[tuple[int, str, str]]:
    seen: dict[str, str] = {}
    return [
        (code, normalised(side, out, ran.known, seen), normalised(side, err, ran.known, seen))
        for code, out, err in side.results
    ]


@pytest.mark.parametrize(
    "index",
    [
        pytest.param(
            index,
            id=f"{index:02d} {each.id}",
            marks=[pytest.mark.xfail(strict=True, reason=each.differs)] if each.differs else [],
        )
        for index, each in enumerate(TABLE)
    ],
)
def test_a_command_prints_the_same_either_way(ran: Ran, index: int) -> None:
    local = _outputs(ran, ran.local)[index]
    remote = _outputs(ran, ran.remote)[index]
    assert remote == local


SLASH = [
    row("/help"),
    row("/usage"),
    row("/threads"),
    row("/title parity title"),
    row("/rewind 2"),
    row("/undo-rewind"),
    row("/fork 1"),
    row("/model"),
    row("/model other-model"),
    row("/approval never"),
    row("/compact"),
    row("/goal finish the parity"),
    row("/plan on"),
]
"""The session's slash commands, each in a session resuming the thread
(``kun resume T1``), in this order on each side."""

SESSION_SCRIPT = [answer("summary.")]
"""The model's answer to ``/compact``."""
READY = "Ctrl-D leaves"


def _run_slash(side: Side, workspace: Path) -> None:
    env = {**side.env, "TERM": "xterm", "PROMPT_TOOLKIT_NO_CPR": "1", "LINES": "40"}
    env["COLUMNS"] = "120"
    for each in SLASH:
        (command,) = each.args
        child = pexpect.spawn(
            sys.executable, ["-m", "kun", *side.command, "resume", side.names["T1"]],
            cwd=str(workspace), env=env, encoding="utf-8", codec_errors="replace",
            timeout=RUN_SECONDS, dimensions=(40, 120),
        )  # fmt: skip
        child.logfile_read = io.StringIO()
        child.expect(READY)
        child.send(command + "\r")
        _leave(child)
        child.close()
        assert isinstance(child.logfile_read, io.StringIO)
        side.results.append((child.exitstatus or 0, plain(child.logfile_read.getvalue()), ""))


def _leave(child: pexpect.spawn) -> None:
    """Ctrl-D until the session ends: one typed while the command still
    runs reaches the terminal between two prompts, in cooked mode, whose
    line discipline swallows it (as it would a person's typed-ahead Ctrl-D)."""
    deadline = time.monotonic() + RUN_SECONDS
    while True:
        child.send("\x04")
        try:
            child.expect(pexpect.EOF, timeout=1.0)
            return
        except pexpect.TIMEOUT:
            assert time.monotonic() < deadline, "the session did not end"


@pytest.fixture(scope="module")
def sessions(built: Built) -> Ran:
    """Every slash command, in a session on each side."""
    return on_both_sides(built, "session", SESSION_SCRIPT, _run_slash)


def _drawn(ran: Ran, side: Side) -> list[tuple[int, str, str]]:
    """What the session drew, in lines, with the prompt's own redrawing
    (a character backspaced over, blank lines, trailing spaces, carriage
    returns) left out."""
    drawn = []
    for code, text, err in _outputs(ran, side):
        text = re.sub(r".?\x08", "", text).replace("\r", "\n")
        lines = [_once(line.rstrip()) for line in text.split("\n")]
        drawn.append((code, "\n".join(line for line in lines if line), err))
    return drawn


def _once(line: str) -> str:
    """A prompt line the prompt drew twice on one row (``> /x> /x``), once."""
    return re.sub(r"^(>.*?)\1+$", r"\1", line)


@pytest.mark.parametrize(
    "index",
    [
        pytest.param(
            index,
            id=each.id,
            marks=[pytest.mark.xfail(strict=True, reason=each.differs)] if each.differs else [],
        )
        for index, each in enumerate(SLASH)
    ],
)
def test_a_slash_command_draws_the_same_either_way(sessions: Ran, index: int) -> None:
    local = _drawn(sessions, sessions.local)[index]
    remote = _drawn(sessions, sessions.remote)[index]
    assert remote == local
