"""Colour only for a terminal, never with NO_COLOR (any non-empty value) or
--no-color: in ``kun run``'s live view and in the session."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import kun.cli.colors
from kun.chat.view import ChatSink
from tests.terminal_support import answer, finish, serve, spawn, write_config

GREEN = "\x1b[32m"


@pytest.fixture(autouse=True)
def _fresh_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kun.cli.colors, "_disabled", False)
    monkeypatch.delenv("NO_COLOR", raising=False)


def _run_shown(tmp_path: Path, prefix: str, *flags: str) -> str:
    with serve([answer("hello there")]) as provider:
        config = write_config(tmp_path, provider.base_url)
        command = [
            prefix, sys.executable, "-m", "kun", "run", "hi", *flags,
            "--config", str(config), "--home", str(tmp_path / "home"),
        ]  # fmt: skip
        child = spawn(command, cwd=tmp_path, shell=True)
        child.expect("turn completed")
        finish(child)
    return str(child.logfile_read.getvalue())  # with its escape sequences


@pytest.mark.parametrize(
    ("prefix", "flags", "colored"),
    [
        ("", (), True),
        ("NO_COLOR=1", (), False),
        ("NO_COLOR=", (), True),
        ("", ("--no-color",), False),
    ],
)
def test_kun_run_colours_a_terminal_unless_told_not_to(
    tmp_path: Path, prefix: str, flags: tuple[str, ...], colored: bool
) -> None:
    shown = _run_shown(tmp_path, prefix or "env", *flags)
    assert (GREEN in shown) is colored, repr(shown[-300:])


def test_the_session_honours_no_color_and_the_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    assert ChatSink().color
    monkeypatch.setenv("NO_COLOR", "")
    assert ChatSink().color
    monkeypatch.setenv("NO_COLOR", "1")
    assert not ChatSink().color
    monkeypatch.delenv("NO_COLOR")
    kun.cli.colors.disable_color()
    assert not ChatSink().color
