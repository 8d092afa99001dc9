"""``kun replay`` asks ``rg`` whether a log may hold a rewind: the answer is
the in-process scan's on any bytes, and without a working ``rg`` it is that
scan."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from kun.app import rewind_scan
from kun.app.rewind_scan import REWIND_TAG, RewindScan
from kun.contracts import events as ev
from kun.store import snapshot, streaming

TAG = REWIND_TAG.encode()
LINE = b'{"kind":"assistant_text_delta","seq":3,"at":1,"item_id":"t","text":"hi"}\n'


def test_the_constants_are_the_stores() -> None:
    assert f'"{ev.ThreadRewound.__struct_config__.tag}"' == REWIND_TAG
    assert snapshot.SNAPSHOT_NAME == rewind_scan.SNAPSHOT_NAME


CASES = {
    "no tag": LINE * 1000,
    "a rewind line": LINE * 500 + b'{"kind":' + TAG + b',"seq":9,"at":1}\n' + LINE,
    "the tag inside some text": LINE + b'{"kind":"x","text":"say ' + TAG + b'"}\n',
    "the tag last, no newline": LINE * 10 + TAG,
    "after a NUL byte": b"\x00" * 10 + LINE + TAG + b"\n",
    "after a UTF-16 byte-order mark": b"\xff\xfe" + LINE + TAG + b"\n",
    "the tag cut short": LINE + TAG[:-1] + b"\n",
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_rg_answers_as_the_scan_in_process(tmp_path: Path, name: str) -> None:
    log = tmp_path / "events.jsonl"
    log.write_bytes(CASES[name])
    with RewindScan(log) as scan:
        assert scan._child is not None, "rg was started"
        child = scan._child
        answer = scan.may_rewind()
    assert child.returncode in (0, 1), "rg answered: no fallback hides a wrong flag"
    assert answer == streaming.may_rewind(log) == (TAG in CASES[name])


@pytest.mark.parametrize("rg", ["missing", "broken"])
def test_without_a_working_rg_the_scan_runs_in_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rg: str
) -> None:
    fake = tmp_path / "rg"
    fake.write_text("#!/bin/sh\nexit 2\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setattr(rewind_scan, "_rg", lambda: None if rg == "missing" else str(fake))
    for name in ("no tag", "a rewind line"):
        log = tmp_path / f"{name}.jsonl"
        log.write_bytes(CASES[name])
        with RewindScan(log) as scan:
            assert scan.may_rewind() == (name == "a rewind line")


def test_rg_waits_for_an_unusable_snapshot(tmp_path: Path) -> None:
    """With a snapshot beside the log only its tail is scanned (in process),
    so rg starts only when the whole log is asked about."""
    log = tmp_path / "events.jsonl"
    log.write_bytes(CASES["a rewind line"])
    (tmp_path / rewind_scan.SNAPSHOT_NAME).write_bytes(b"not a snapshot")
    with RewindScan(log) as scan:
        assert scan._child is None
        assert scan.may_rewind() is True


def test_an_unfinished_scan_is_stopped(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    log.write_bytes(CASES["no tag"])
    with RewindScan(log) as scan:
        child = scan._child
    assert child is not None and child.returncode is not None
