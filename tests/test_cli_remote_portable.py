"""``kun --server URL export | import`` as a user runs them: a real ``kun
serve`` driven by the real ``kun`` CLI in subprocesses whose own home stays
empty (see tests/test_cli_remote.py).

A bundle made here imports into the server with its log and side file byte
for byte, and exported back it imports anywhere with the same projection;
each prints what the local command prints. A tampered bundle is refused in
the very line the local import prints (this file and the member named); an
id already taken is one line pointing at --as, and --as imports a copy;
--replace goes through to the server, --home does not go with --server."""

from __future__ import annotations

import io
import subprocess
import sys
import tarfile
from pathlib import Path

import anyio
import pytest

from kun.store.paths import blobs_dir, log_path
from kun.store.replay import replay_log
from tests.portable.conftest import BIG, stored_thread
from tests.portable.marks import unmarked, unmarked_state
from tests.test_cli_remote import ANSWER, _environ, _one_line, _thread_of, serving

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def _kun_in(home: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    """The local command on ``home``, no server."""
    command = [sys.executable, "-m", "kun", *args, "--home", str(home)]
    return await anyio.run_process(command, check=False, env=_environ())


def _tampered(bundle: Path, out: Path) -> str:
    """``out``: ``bundle`` with one byte of its side file flipped; answers
    the side file's member name."""
    with tarfile.open(bundle) as tar:
        members = {m.name: tar.extractfile(m).read() for m in tar.getmembers()}  # type: ignore[union-attr]
    name = next(n for n in members if n.startswith("blobs/"))
    data = bytearray(members[name])
    data[5] ^= 1
    members[name] = bytes(data)
    with tarfile.open(out, "w:gz") as tar:
        for member, content in members.items():
            info = tarfile.TarInfo(member)
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
    return name


async def test_a_bundle_goes_in_and_comes_back_unchanged(tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    await anyio.to_thread.run_sync(stored_thread, mine)
    bundle = tmp_path / "t.kun.tar.gz"
    async with serving(tmp_path, []) as s:
        local = await _kun_in(mine, "export", "thr_source", "-o", str(bundle))
        assert local.returncode == 0, local
        put = await s.kun("import", str(bundle))
        assert (put.returncode, put.stdout) == (0, b"thr_source\n"), put
        events = len(log_path(mine, "thr_source").read_bytes().splitlines())
        assert put.stderr.decode() == f"imported thr_source ({events} events)\n"
        assert unmarked(log_path(s.home, "thr_source")) == log_path(mine, "thr_source").read_bytes()
        assert [p.read_bytes() for p in blobs_dir(s.home, "thr_source").iterdir()] == [BIG]
        again = await s.kun("import", str(bundle))
        assert again.stderr.decode() == "already imported: thr_source (unchanged)\n"

        back = tmp_path / "back.kun.tar"
        got = await s.kun("export", "thr_source", "-o", str(back))
        marked = f"({events} events".replace(str(events), str(events + 1))
        expected = local.stdout.decode().replace(str(bundle), str(back))
        assert got.stdout.decode() == expected.replace(f"({events} events", marked)
        with tarfile.open(back, "r:") as plain:  # a plain tar, as asked
            assert plain.getnames()[0] == "manifest.json"
        refused = _one_line(await s.kun("export", "thr_source", "-o", str(back)))
        assert "file exists (give --force to overwrite it)" in refused
        assert (await s.kun("export", "thr_source", "-o", str(back), "--force")).returncode == 0
        assert not [p.name for p in s.home.iterdir() if p.name.startswith(".serve-")]
    elsewhere = tmp_path / "elsewhere"
    await anyio.to_thread.run_sync(_import_locally, back, elsewhere)
    assert unmarked_state(log_path(elsewhere, "thr_source")) == replay_log(
        log_path(mine, "thr_source")
    )
    assert [p.read_bytes() for p in blobs_dir(elsewhere, "thr_source").iterdir()] == [BIG]


def _import_locally(bundle: Path, home: Path) -> None:
    from kun.portable.unbundle import import_bundle

    import_bundle(home, bundle)


async def test_refusals_read_as_the_local_ones(tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    await anyio.to_thread.run_sync(stored_thread, mine)
    bundle, altered = tmp_path / "t.kun.tar.gz", tmp_path / "altered.kun.tar.gz"
    async with serving(tmp_path, [ANSWER]) as s:
        await _kun_in(mine, "export", "thr_source", "-o", str(bundle))
        member = await anyio.to_thread.run_sync(_tampered, bundle, altered)
        remote = _one_line(await s.kun("import", str(altered)))
        local = _one_line(await s.local("import", str(altered)))
        assert remote == local
        assert f"bundle {altered}: {member}: SHA-256 differs" in remote
        assert not (s.home / "threads" / "thr_source").exists()

        taken = _thread_of(await s.kun("run", "hello"))
        conflict = _one_line(await s.kun("import", str(bundle), "--as", taken))
        assert f"kun: error: thread {taken} already exists with other content" in conflict
        assert "--as" in conflict
        copy = await s.kun("import", str(bundle), "--as", "thr_copy")
        assert (copy.returncode, copy.stdout) == (0, b"thr_copy\n")

        replace = _one_line(await s.kun("import", str(bundle), "--from", "codex", "--replace"))
        assert "no JSON lines: not a session file" in replace
        home = _one_line(await s.kun("import", str(bundle), "--home", str(tmp_path)))
        assert "--home does not go with --server" in home
        missing = _one_line(await s.kun("export", "thr_nope"))
        assert missing == "kun: error: thread 'thr_nope' not found\n"  # the local words
        junk = tmp_path / "junk.jsonl"
        junk.write_text("not json\n")
        codex = _one_line(await s.kun("import", str(junk), "--from", "codex"))
        assert codex == _one_line(await s.local("import", str(junk), "--from", "codex"))
