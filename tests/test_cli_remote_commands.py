"""The non-live commands over ``kun --server URL`` print what they print on
the server's home without it: the same stdout, stderr and exit status
(``replay`` with every flag and its notes, ``usage`` with its notes,
``threads`` with nothing to list), and the clean-up commands (``gc``,
``rm``, ``trash``, ``restore``, ``reconcile``) work there too. A real
``kun serve`` and the real ``kun`` CLI in subprocesses (see
tests/test_cli_remote.py)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.test_cli_remote import ANSWER, READ_A, _thread_of, serving

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

REPLAYS = [
    (),
    ("--json",),
    ("--strict",),
    ("--from-seq", "3"),
    ("--until-seq", "4"),
    ("--hidden", "--reasoning"),
    ("--until-seq", "4", "--json"),
]


def _printed(result: subprocess.CompletedProcess[bytes]) -> tuple[int, bytes, bytes]:
    return result.returncode, result.stdout, result.stderr


async def test_replay_and_usage_print_the_local_bytes_notes_too(tmp_path: Path) -> None:
    async with serving(tmp_path, [READ_A, ANSWER]) as s:
        thread = _thread_of(await s.kun("run", "read a.py", "--approval", "full-auto"))
        with (s.home / "threads" / thread / "events.jsonl").open("ab") as log:
            log.write(b'{"seq": 999, "kind": "turn_st')  # a torn last line: a note
        for flags in REPLAYS:
            here = _printed(await s.local("replay", thread, *flags))
            assert _printed(await s.kun("replay", thread, *flags)) == here, flags
        plain = _printed(await s.local("replay", thread))
        assert b"torn last line" in plain[2]
        strict = _printed(await s.kun("replay", thread, "--strict"))
        assert strict == _printed(await s.local("replay", thread, "--strict"))
        usage = _printed(await s.local("usage", thread))
        assert usage[2] == f"note: {thread}: skipped 1 unreadable line\n".encode()
        assert _printed(await s.kun("usage", thread)) == usage
        assert _printed(await s.kun("usage", thread, "--json")) == _printed(
            await s.local("usage", thread, "--json")
        )


async def test_a_log_file_is_read_here_with_a_server(tmp_path: Path) -> None:
    async with serving(tmp_path, [ANSWER]) as s:
        thread = _thread_of(await s.kun("run", "hello"))
        copy = tmp_path / "copy" / "events.jsonl"
        copy.parent.mkdir()
        shutil.copyfile(s.home / "threads" / thread / "events.jsonl", copy)
        for args in (("replay", str(copy)), ("usage", str(copy)), ("replay", str(copy), "--json")):
            local = _printed(await s.local(*args))
            assert local[0] == 0
            assert _printed(await s.kun(*args)) == local


async def test_no_threads_names_the_servers_home(tmp_path: Path) -> None:
    async with serving(tmp_path, []) as s:
        listed = _printed(await s.kun("threads"))
        assert listed == (0, f"no threads under {s.home}\n".encode(), b"")
        assert listed == _printed(await s.local("threads"))


async def test_gc_rm_trash_restore_and_reconcile_work_on_the_server(tmp_path: Path) -> None:
    async with serving(tmp_path, [ANSWER, ANSWER]) as s:
        thread = _thread_of(await s.kun("run", "hello"))
        await s.kun("run", "again", "--thread", thread)
        assert (await s.kun("rewind", thread, "2")).returncode == 0
        collected = await s.kun("gc", thread)
        assert collected.returncode == 0, collected
        line = collected.stdout.decode()
        assert line.startswith(f"{thread}: dropped 1 hidden turn (")
        assert line.endswith(f": kun --server {s.url} gc {thread} --confirm\n")
        confirmed = (await s.kun("gc", thread, "--confirm")).stdout.decode()
        assert confirmed.startswith(f"removed the old generations of {thread}: ")
        removed = await s.kun("rm", thread)
        assert removed.returncode == 0, removed
        assert removed.stdout.decode().endswith(
            f"; kun --server {s.url} restore {thread} brings it back\n"
        )
        assert not (s.home / "threads" / thread).exists()
        listed = (await s.kun("trash")).stdout.decode()
        assert listed.startswith(f"{thread}  removed ")
        assert _printed(await s.kun("restore", thread)) == (0, f"restored {thread}\n".encode(), b"")
        assert (s.home / "threads" / thread / "events.jsonl").exists()
        assert _printed(await s.kun("trash")) == (0, b"the trash is empty\n", b"")
        assert _printed(await s.kun("reconcile")) == (0, b"nothing to reconcile\n", b"")
        assert not s.client_home.exists() or not any(s.client_home.iterdir())
