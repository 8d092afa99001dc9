"""The mistakes a person makes at the command line, each one readable line
on stderr (``kun: error: ...``), a non-zero exit, no traceback, and the
home exactly as it was: missing or extra arguments, unknown ids and
prefixes, bad numbers, paths that are not there or are folders, a corrupt
``kun.toml``, a corrupt log, a home that is a file, a server that is not
kun's. Most run in process (the same code path as the console script);
a few run as real subprocesses to prove the script itself behaves."""

from __future__ import annotations

import gzip
import io
import os
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from kun.cli.threads import TITLE_WIDTH
from kun.entry import cli

GOLDEN = Path(__file__).parent.parent / "events" / "golden"
T = "thr_01JE1F6G7H8J9K"
OTHER = "thr_01JDX8R5WN2F4T"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A home with two threads whose ids share the prefix ``thr_01J``."""
    root = tmp_path / "home"
    for thread, golden in ((T, "everything"), (OTHER, "aborted_turn")):
        (root / "threads" / thread).mkdir(parents=True)
        shutil.copy(GOLDEN / f"{golden}.events.jsonl", root / "threads" / thread / "events.jsonl")
    return root


_BOOKKEEPING = {"writer.lock", "index.json"}
"""A writer's lock file and the list's cache: neither holds a thread's data."""


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name not in _BOOKKEEPING
    }


def _invoke(home: Path, args: list[str], stdin: bytes = b"", **env: str) -> Result:
    env = {"KUN_HOME": str(home), "NO_COLOR": "1", "KUN_SERVER": "", "KUN_CONFIG": "", **env}
    return CliRunner().invoke(cli, args, input=stdin, env=env, prog_name="kun")


def _assert_one_error_line(result: Result, needle: str) -> None:
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code != 0
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("kun: error: "), result.stderr
    assert needle in lines[0], lines[0]


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


MISTAKES: list[tuple[list[str], str]] = [
    (["replay"], "Missing argument 'THREAD'"),
    (["replay", T, "extra"], "unexpected extra argument"),
    (["replay", "nope"], "thread 'nope' not found"),
    (["replay", "thr_01J"], "is ambiguous"),
    (["replay", "/nonexistent/events.jsonl"], "/nonexistent/events.jsonl: no such file"),
    (["replay", "/"], "/: is a directory"),
    (["usage", "./nope/events.jsonl"], "no such file"),
    (["replay", T, "--until-seq", "-1"], "--until-seq"),
    (["replay", T, "--until-seq", "abc"], "--until-seq"),
    (["replay", T, "--from-seq", "0"], "--from-seq"),
    (["fork", T, "--at-seq", "0"], "--at-seq"),
    (["fork", T, "--at-seq", "-5"], "--at-seq"),
    (["fork", T, "--at-seq", "seven"], "--at-seq"),
    (["fork", T, "--at-seq", "99999999999999999999999"], "past its end"),
    (["fork", T, "--at-turn", "99"], "there is no turn 99"),
    (["rewind", T], "give --before-turn"),
    (["rewind", T, "99"], "there is no turn 99"),
    (["rewind", T, "abc"], "has no turn 'abc'"),
    (["rewind", T, "\u00b2"], "has no turn"),
    (["rewind", T, "--before-turn", "0"], "there is no turn 0"),
    (["usage", T, T, T], "give one thread, or two"),
    (["usage", T, "nope"], "thread 'nope' not found"),
    (["threads", "--limit", "0"], "--limit"),
    (["steer", T, "hi"], "has no running turn"),
    (["steer", T, "-"], "TEXT is blank"),
    (["interrupt", T], "has no running turn"),
    (["rm", "nope"], "thread 'nope' not found"),
    (["restore", "nope"], "no thread 'nope' in the trash"),
    (["gc", "nope"], "thread 'nope' not found"),
    (["run", "-"], "the prompt is blank"),
    (["run", "hi", "--thread", "nope"], "thread 'nope' not found"),
    (["run", "hi", "--workspace", "/nonexistent/kun/ws"], "does not exist"),
    (["config", "--config", "/nonexistent/kun.toml"], "does not exist"),
    (["import", "/nonexistent/bundle.tar.gz"], "does not exist"),
    (["bogus"], "No such command 'bogus'"),
    (["replay", T, "--bogus"], "No such option"),
    (["--max-steps", "3", "replay", T], "the session's options go after the command"),
    (["--server", "ftp://example.invalid", "threads"], "not an http:// or https:// URL"),
    (["--server", "http://127.0.0.1:1", "threads"], "nothing is listening"),
    (["--server", "http://no-such-host.invalid:8765", "threads"], "no such host"),
    (["--server", "http://127.0.0.1:1", "gc", T], "nothing is listening"),
    (["--server", "http://127.0.0.1:1", "demo"], "--server works with"),
]


@pytest.mark.parametrize(("args", "needle"), MISTAKES, ids=[" ".join(a) for a, _ in MISTAKES])
def test_a_mistake_is_one_line_and_changes_nothing(
    home: Path, args: list[str], needle: str
) -> None:
    before = _files(home)
    _assert_one_error_line(_invoke(home, args), needle)
    assert _files(home) == before


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (b"this is [not toml", "is not valid TOML"),
        (b"[runtime]\nmax_steps = 'lots'\n", "runtime.max_steps"),
        (b"[providers]\nfoo = 3\n", "providers.foo"),
        (b"max_steps = 3\n", "unknown key"),
        (b"\xff\xfe", "is not valid TOML"),
    ],
)
def test_a_bad_kun_toml_is_named_with_its_fault(
    home: Path, tmp_path: Path, content: bytes, needle: str
) -> None:
    config = _write(tmp_path / "kun.toml", content)
    for command in (["config"], ["run", "hi"], ["compact", T]):
        _assert_one_error_line(_invoke(home, [*command, "--config", str(config)]), needle)


def test_paths_that_are_folders(home: Path, tmp_path: Path) -> None:
    folder = tmp_path / "folder"
    folder.mkdir()
    _assert_one_error_line(_invoke(home, ["import", str(folder)]), "is a directory")
    _assert_one_error_line(_invoke(home, ["export", T, "-o", str(folder)]), "is a directory")
    _assert_one_error_line(_invoke(home, ["run", "hi", "--config", str(folder)]), "directory")


@pytest.fixture
def bundle(home: Path, tmp_path: Path) -> Path:
    out = tmp_path / "t.kun.tar.gz"
    assert _invoke(home, ["export", T, "-o", str(out)]).exit_code == 0
    return out


@pytest.mark.parametrize(
    ("make", "needle"),
    [
        (lambda b: b"", "not a kun bundle"),
        (lambda b: os.urandom(4096), "not a kun bundle"),
        (lambda b: b[: len(b) // 2], "bundle"),
        (lambda b: gzip.compress(b"plain text, not a tar"), "not a kun bundle"),
    ],
    ids=["empty", "random", "truncated", "gzip-not-tar"],
)
def test_import_of_a_file_that_is_no_bundle(
    home: Path, tmp_path: Path, bundle: Path, make: object, needle: str
) -> None:
    assert callable(make)
    bad = _write(tmp_path / "bad.kun.tar.gz", make(bundle.read_bytes()))
    before = _files(home)
    _assert_one_error_line(_invoke(home, ["import", str(bad), "--as", "thr_new"]), needle)
    assert _files(home) == before


def test_export_into_a_folder_that_is_not_there_names_the_users_path(home: Path) -> None:
    """Not the temporary file beside it that the user never named."""
    result = _invoke(home, ["export", T, "-o", "/nonexistent/kun/out.kun.tar.gz"])
    _assert_one_error_line(result, "/nonexistent/kun")
    assert ".tmp" not in result.stderr and ".part" not in result.stderr


def _corrupt(home: Path, line: int, data: bytes) -> None:
    log = home / "threads" / T / "events.jsonl"
    lines = log.read_bytes().split(b"\n")
    lines[line] = data
    log.write_bytes(b"\n".join(lines))


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        (b'{"kind":"item_compl', "line 11"),
        (b'{"kind":"turn_started","seq":11,"at":1,"turn_id":"t","provider":"\xff\xfe"}', "UTF-8"),
    ],
    ids=["cut-json", "not-utf8"],
)
def test_a_corrupt_middle_line_is_named_and_nothing_is_rewritten(
    home: Path, tmp_path: Path, data: bytes, needle: str
) -> None:
    _corrupt(home, 10, data)
    before = _files(home)
    for args in (
        ["replay", T],
        ["replay", T, "--json"],
        ["fork", T],
        ["gc", T],
        ["rewind", T, "--undo"],
        ["export", T, "-o", str(tmp_path / "x.kun.tar.gz")],
    ):
        result = _invoke(home, args)
        _assert_one_error_line(result, needle)
        assert ".export-" not in result.stderr, "names the user's log, not a scratch copy"
    assert _files(home) == before
    assert not (tmp_path / "x.kun.tar.gz").exists()


def test_an_unreadable_thread_is_listed_without_widening_the_table(home: Path) -> None:
    _corrupt(home, 10, b'{"kind":"item_compl')
    (home / "index.json").unlink(missing_ok=True)
    result = _invoke(home, ["threads"])
    assert result.exit_code == 0, result.output
    header, *rows = result.stdout.splitlines()
    broken = next(row for row in rows if row.startswith(T))
    assert "(unreadable: " in broken and "line 11" in broken
    assert header.index("WORKSPACE") - header.index("TITLE") <= TITLE_WIDTH + 2, header


def test_a_title_cannot_drive_the_terminal(home: Path) -> None:
    """The model may write a thread's title: an escape in it is shown, not sent."""
    log = home / "threads" / T / "events.jsonl"
    title = '"title":"ledger export --since"'
    evil = '"title":"\\u001b]0;pwned\\u0007\\u001b[31mred"'
    log.write_text(log.read_text().replace(title, evil, 1))
    result = _invoke(home, ["threads"])
    assert result.exit_code == 0 and "\x1b" not in result.stdout and "\x07" not in result.stdout
    assert "\\x1b]0;pwned\\x07\\x1b[31mred" in result.stdout


def test_an_unknown_kind_is_skipped_with_a_note_and_refused_when_strict(home: Path) -> None:
    _corrupt(home, 10, b'{"kind":"martian","seq":11,"at":1}')
    tolerant = _invoke(home, ["replay", T])
    assert tolerant.exit_code == 0 and "martian" in tolerant.stderr
    assert "Traceback" not in tolerant.stderr
    _assert_one_error_line(_invoke(home, ["replay", T, "--strict"]), "unknown event kind 'martian'")


def test_a_torn_tail_is_ignored_with_a_note(home: Path) -> None:
    log = home / "threads" / T / "events.jsonl"
    log.write_bytes(log.read_bytes() + b'{"kind":"turn_sta')
    result = _invoke(home, ["replay", T])
    assert result.exit_code == 0 and "torn last line" in result.stderr
    assert log.read_bytes().endswith(b'{"kind":"turn_sta'), "a read repairs nothing"


def test_a_stray_folder_among_kept_generations_is_no_generation(home: Path) -> None:
    """A folder a person made beside gc's numbered generations is not one
    (``²`` passes ``isdigit`` but not ``int``)."""
    stray = home / "threads" / T / "generations" / "\u00b2"
    stray.mkdir(parents=True)
    for args in (["gc", T], ["gc", T, "--confirm"]):
        result = _invoke(home, args)
        assert result.exit_code == 0 and result.exception is None, result.output


def test_a_home_that_is_a_file(tmp_path: Path) -> None:
    not_a_folder = _write(tmp_path / "home", b"I am a file\n")
    for args in (["threads"], ["replay", T], ["import", "/dev/null"], ["trash"], ["reconcile"]):
        _assert_one_error_line(_invoke(not_a_folder, args), "is not a directory")
    assert not_a_folder.read_bytes() == b"I am a file\n"


def test_a_log_file_that_cannot_be_opened_stops_the_run_before_a_thread(
    home: Path, tmp_path: Path
) -> None:
    before = _files(home)
    for target in (tmp_path, _write(tmp_path / "file", b"") / "x.log"):
        result = _invoke(
            home,
            ["run", "hi", "--log-json-to", str(target)],
            OPENAI_API_KEY="sk-test",
            OPENAI_BASE_URL="http://127.0.0.1:1/v1",
        )
        _assert_one_error_line(result, str(tmp_path))
    assert _files(home) == before


def test_serve_on_a_port_already_taken(home: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        result = _invoke(home, ["serve", "--port", str(port)])
    _assert_one_error_line(result, f"cannot listen on 127.0.0.1:{port}")


class _NotKun(BaseHTTPRequestHandler):
    """Answers every request with an HTML page, as a web server that is not
    kun's would (404 for GET, 200 for POST)."""

    def _page(self, status: int) -> None:
        body = b"<!DOCTYPE html>\n<html><head><title>Error</title></head>\n<body>no</body></html>\n"
        self.send_response(status)
        self.send_header("content-type", "text/html")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self._page(404)

    def do_POST(self) -> None:
        self._page(200)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def not_kun() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _NotKun)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize(
    "args",
    [["threads"], ["replay", T], ["usage", T], ["fork", T], ["rewind", T, "--undo"], ["run", "hi"]],
    ids=lambda a: " ".join(a),
)
def test_a_server_that_is_not_kun(home: Path, not_kun: str, args: list[str]) -> None:
    _assert_one_error_line(_invoke(home, ["--server", not_kun, *args]), "not kun")


class _OtherJsonApi(BaseHTTPRequestHandler):
    """Another JSON API on the port: 200 and ``{"ok": true}`` to everything."""

    def _answer(self) -> None:
        body = b'{"ok": true}'
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self._answer()

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", "0")))
        self._answer()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def other_json_api() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _OtherJsonApi)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_a_server_that_answers_json_that_is_not_kuns(
    home: Path, tmp_path: Path, bundle: Path, other_json_api: str
) -> None:
    out = tmp_path / "out.kun.tar.gz"
    for args in (
        ["threads"],
        ["usage", T],
        ["fork", T],
        ["run", "hi"],
        ["steer", T, "hi"],
        ["import", str(bundle)],
        ["export", T, "-o", str(out)],
    ):
        _assert_one_error_line(_invoke(home, ["--server", other_json_api, *args]), "kun")
    assert not out.exists()


def _script(home: Path, *args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "KUN_HOME": str(home), "NO_COLOR": "1"}
    env.pop("KUN_SERVER", None)
    return subprocess.run(
        [sys.executable, "-m", "kun", *args],
        input=stdin,
        capture_output=True,
        env=env,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["replay"], "Missing argument"),
        (["rewind", T, "\u00b2"], "has no turn"),
        (["fork", T, "--at-seq", "0"], "--at-seq"),
    ],
)
def test_the_console_script_fails_in_one_line(home: Path, args: list[str], needle: str) -> None:
    done = _script(home, *args)
    err = done.stderr.decode()
    assert done.returncode == 1 and "Traceback" not in err
    assert err.count("\n") == 1 and err.startswith("kun: error: ") and needle in err, err


def test_the_console_script_names_a_corrupt_line(home: Path) -> None:
    _corrupt(home, 10, b'{"kind":"item_compl')
    done = _script(home, "replay", T)
    err = done.stderr.decode()
    assert done.returncode == 1 and err.count("\n") == 1 and "line 11" in err, err
    assert io.BytesIO(done.stdout).read() == b""
