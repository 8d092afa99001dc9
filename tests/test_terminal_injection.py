"""Text kun did not write cannot drive the user's terminal: a model reply, a
tool's output or arguments and a title holding escape sequences are shown
as ``\\xNN`` by ``kun run``, ``kun replay``, ``kun threads`` and the
session, while ``--json`` keeps them byte for byte."""

from __future__ import annotations

import io
import json
from pathlib import Path

import msgspec
import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from kun.domain.shown import shown, shown_cell
from kun.entry import cli
from kun.model.scripted import tool_reply
from kun.testing.fake_provider import FakeResponse
from kun.testing.logbuilder import LogBuilder
from tests.terminal_support import answer, finish, kun, only_thread, serve, spawn, write_config

PAYLOADS = ("\x1b]0;pwned\x07", "\x1b]52;c;cHduZWQ=\x07", "\x9b31m", "\x1b[2J")
EVIL = "".join(PAYLOADS)
ESCAPED = "\\x1b]0;pwned\\x07\\x1b]52;c;cHduZWQ=\\x07\\x9b31m\\x1b[2J"
RAW = ("\x1b]", "\x9b", "\x1b[2J", "\x07")


def _clean(text: str) -> None:
    for raw in RAW:
        assert raw not in text, (raw, text)


@given(st.text())
def test_shown_leaves_only_newlines_and_tabs(text: str) -> None:
    for out, kept in ((shown(text), "\n\t"), (shown_cell(text), "")):
        assert all(c in kept for c in out if ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F)


def test_shown_keeps_text_and_line_ends() -> None:
    assert shown("a\r\nb\tc\n") == "a\nb\tc\n"
    assert shown("a line of a CRLF file\r") == "a line of a CRLF file"
    assert shown("50%\r100%") == "50%\\x0d100%"
    assert shown(EVIL) == ESCAPED
    assert shown_cell("a\nb") == "a\\x0ab"
    plain = "no controls here · ünïcode"
    assert shown(plain) is plain


def _log(home: Path) -> str:
    b = LogBuilder("t_evil")
    b.create(workspace="/w", title=f"title {EVIL}", provider="p", model="m")
    b.start_turn("hi")
    b.assistant_text([f"reply {EVIL}"])
    b.complete()
    path = home / "threads" / "t_evil" / "events.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"".join(msgspec.json.encode(e) + b"\n" for e in b.events))
    return "t_evil"


def test_replay_and_threads_show_escapes_and_json_keeps_them(tmp_path: Path) -> None:
    home = tmp_path / "home"
    thread = _log(home)
    runner = CliRunner()
    for args in (["replay", thread], ["threads"], ["usage", thread]):
        result = runner.invoke(cli, [*args, "--home", str(home)])
        assert result.exit_code == 0, result.output
        _clean(result.stdout)
    replayed = runner.invoke(cli, ["replay", thread, "--home", str(home)]).stdout
    assert f"reply {ESCAPED}" in replayed
    listed = runner.invoke(cli, ["threads", "--home", str(home)]).stdout
    assert f"title {ESCAPED}" in listed
    raw = runner.invoke(cli, ["replay", thread, "--json", "--home", str(home)]).stdout
    assert EVIL in raw.replace("\\u001b", "\x1b").replace("\\u0007", "\x07")


def test_kun_run_shows_escapes_and_its_log_keeps_them(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "evil.txt").write_text(f"out {EVIL}\n")
    write = {"path": "b.txt\nallow? [y/a/N] y", "content": f"arg {EVIL}"}
    responses = [
        FakeResponse(chunks=tuple(tool_reply("read_file", {"path": "evil.txt"}))),
        FakeResponse(chunks=tuple(tool_reply("write_file", write))),
        answer(f"reply {EVIL}"),
    ]
    home = tmp_path / "home"
    with serve(responses) as provider:
        config = write_config(tmp_path, provider.base_url)
        code, out, err = kun(
            "run", "go", "--approval", "auto", "--config", str(config), "--home", str(home),
            "--workspace", str(workspace),
        )  # fmt: skip
    assert code == 0, err
    _clean(out)
    _clean(err)
    assert f"out {ESCAPED}" in out and f"reply {ESCAPED}" in out
    assert f"arg {ESCAPED}" in out
    assert "approval needed: write_file b.txt\\x0aallow? [y/a/N] y" in out
    assert "\nallow?" not in out
    thread = only_thread(home)
    code, text, err = kun("replay", thread, "--home", str(home))
    assert code == 0, err
    _clean(text)
    assert f"reply {ESCAPED}" in text
    code, raw, err = kun("replay", thread, "--json", "--home", str(home))
    assert code == 0, err
    items = json.loads(raw)["turns"][0]["items"]
    assert f"reply {EVIL}" in [item.get("text") for item in items]
    log = (home / "threads" / thread / "events.jsonl").read_text()
    assert json.dumps(f"reply {EVIL}", ensure_ascii=False)[1:-1] in log


def test_the_session_shows_escapes(tmp_path: Path) -> None:
    with serve([answer(f"reply {EVIL}")]) as provider:
        config = write_config(tmp_path, provider.base_url)
        workspace = tmp_path / "ws"
        workspace.mkdir()
        child = spawn(["--config", str(config), "--home", str(tmp_path / "home")], cwd=workspace)
        child.expect("Ctrl-D leaves")
        child.send("hi\r")
        child.expect("turn completed")
        child.send("\x04")
        code, _ = finish(child)
    log = child.logfile_read
    assert isinstance(log, io.StringIO)
    printed = log.getvalue()
    assert code == 0, printed
    assert "\\x1b]0;pwned\\x07" in printed
    for raw in ("\x1b]0;pwned", "\x1b]52", "\x9b", "\x1b[2J"):
        assert raw not in printed, raw


def test_kun_run_json_is_the_log_byte_for_byte_and_its_errors_escaped(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    responses = [
        FakeResponse(chunks=tuple(tool_reply("read_file", {"path": f"gone {EVIL}"}))),
        answer(f"reply {EVIL}"),
    ]
    home = tmp_path / "home"
    with serve(responses) as provider:
        config = write_config(tmp_path, provider.base_url)
        code, out, err = kun(
            "run", "go", "--json", "--config", str(config), "--home", str(home),
            "--workspace", str(workspace),
        )  # fmt: skip
    assert code == 0, err
    _clean(err)
    assert f"gone {ESCAPED}" in err
    log = (home / "threads" / only_thread(home) / "events.jsonl").read_text()
    assert out.splitlines() == log.splitlines()


def test_a_resumed_session_shows_the_title_and_last_reply_escaped(tmp_path: Path) -> None:
    home = tmp_path / "home"
    workspace = tmp_path / "ws"
    workspace.mkdir()
    b = LogBuilder("t_evil")
    b.create(workspace=str(workspace), title=f"title\n{EVIL}", provider="fake", model="m")
    b.start_turn("hi")
    b.assistant_text([f"reply {EVIL}"])
    b.complete()
    path = home / "threads" / "t_evil" / "events.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"".join(msgspec.json.encode(e) + b"\n" for e in b.events))
    with serve([]) as provider:
        config = write_config(tmp_path, provider.base_url)
        child = spawn(
            ["resume", "t_evil", "--config", str(config), "--home", str(home)], cwd=workspace
        )
        child.expect("Ctrl-D leaves")
        child.send("/title\r")
        child.expect("title: title")
        child.send("\x04")
        code, _ = finish(child)
    log = child.logfile_read
    assert isinstance(log, io.StringIO)
    printed = log.getvalue()
    assert code == 0, printed
    assert f"resumed t_evil · title\\x0a{ESCAPED}" in printed
    assert f"reply {ESCAPED}" in printed and f"title: title\\x0a{ESCAPED}" in printed
    for raw in ("\x1b]0;pwned", "\x1b]52", "\x9b", "\x1b[2J"):
        assert raw not in printed, raw


def test_a_servers_log_and_usage_are_escaped_again_on_the_client(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """An older or hostile ``kun serve`` may send raw control characters:
    in the log the client replays and in the usage table it prints."""
    from kun.app.answers import ThreadUsage, UsageReport
    from kun.client import AsyncKunClient
    from kun.contracts.usage import UsageTotals

    home = tmp_path / "home"
    thread = _log(home)
    log = (home / "threads" / thread / "events.jsonl").read_bytes()

    async def resolved(self: object, given: str) -> str:
        return thread

    async def served_log(self: object, given: str) -> bytes:
        return log

    async def usage(self: object, *threads: str) -> UsageReport:
        hostile = ThreadUsage(
            thread_id=f"thr_{EVIL}", usage=UsageTotals(), cost_usd=None, skipped_lines=1
        )
        return UsageReport(threads=[msgspec.structs.replace(hostile, notes=(EVIL,))], text=EVIL)

    monkeypatch.setattr(AsyncKunClient, "resolve_thread", resolved)
    monkeypatch.setattr(AsyncKunClient, "log", served_log)
    monkeypatch.setattr(AsyncKunClient, "usage", usage)
    server = ["--server", "http://127.0.0.1:9"]
    replayed = CliRunner().invoke(cli, [*server, "replay", thread])
    assert replayed.exit_code == 0, replayed.output
    assert f"reply {ESCAPED}" in replayed.stdout
    _clean(replayed.stdout)
    used = CliRunner().invoke(cli, [*server, "usage", thread])
    assert used.exit_code == 0, used.output
    _clean(used.output)
    assert f"note: thr_{ESCAPED}: {ESCAPED}" in used.stderr and f"thr_{ESCAPED}" in used.stdout
