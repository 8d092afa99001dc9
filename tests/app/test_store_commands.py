"""The reading commands on a PostgreSQL database (``--store URL``, or
``[store] url`` in the home's ``kun.toml``) print what they print from a
home holding the same threads; the home-only commands are one line on a
database; the password never shows."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from kun.app.migrate import migrate_home
from kun.cli.options import pasteable, store_option
from kun.store.blobs import blob_ref
from tests.app.test_migrate import SIDE, TID, _events, _home_projection, _write
from tests.cli_support import invoked

pytestmark = pytest.mark.anyio

OTHER = "thr_store_other"


async def _kun(*args: str) -> tuple[int, str, str]:
    result = await invoked(list(args))
    return result.exit_code, result.stdout, result.stderr


async def _homes(tmp_path: Path, url: str) -> tuple[Path, Path]:
    """A home with two threads copied into the database, and an empty home."""
    full, empty = tmp_path / "full", tmp_path / "empty"
    _write(full, _events(TID))
    _write(full, _events(OTHER, turns=1, answer="other"))
    tally = await migrate_home(full, url)
    assert tally.ok and tally.counts == {"copied": 2}
    empty.mkdir()
    return full, empty


async def test_threads_replay_usage_and_export_read_the_database(
    tmp_path: Path, postgres_url: str
) -> None:
    full, empty = await _homes(tmp_path, postgres_url)
    on_db = ("--store", postgres_url, "--home", str(empty))
    on_home = ("--home", str(full))

    code, listed, err = await _kun("threads", "--json", *on_db)
    assert code == 0, err
    assert {t["thread_id"] for t in json.loads(listed)} == {TID, OTHER}
    assert json.loads(listed) == json.loads((await _kun("threads", "--json", *on_home))[1])
    code, table, _ = await _kun("threads", *on_db)
    assert code == 0 and "moved" in table

    for command in (
        ("replay", TID),
        ("replay", TID[:12]),
        ("replay", "--json", TID),
        ("usage", TID),
        ("usage", "--json", TID),
        ("usage", TID, OTHER),
    ):
        code, out, err = await _kun(*command, *on_db)
        assert code == 0, (command, err)
        assert out == (await _kun(*command, *on_home))[1], command
    assert "answer 1" in (await _kun("replay", TID, *on_db))[1]

    bundle = tmp_path / "out.kun.tar.gz"
    code, out, err = await _kun("export", TID, "-o", str(bundle), *on_db)
    assert code == 0, err
    assert out.startswith(f"exported {TID} (") and "1 side file" in out
    with tarfile.open(bundle) as tar:
        names = tar.getnames()
        member = tar.extractfile(next(n for n in names if n.endswith("events.jsonl")))
        assert member is not None
        log = member.read()
    assert any(name.endswith(blob_ref(SIDE).sha256) for name in names)
    unpacked = tmp_path / "unpacked" / "threads" / TID / "events.jsonl"
    unpacked.parent.mkdir(parents=True)
    unpacked.write_bytes(log)
    assert _home_projection(tmp_path / "unpacked", TID) == _home_projection(full, TID)


async def test_the_home_file_chooses_the_database_and_home_only_commands_say_so(
    tmp_path: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("KUN_CONFIG", raising=False)
    _, home = await _homes(tmp_path, postgres_url)
    (home / "kun.toml").write_text(f'[store]\nurl = "{postgres_url}"\n')

    code, listed, err = await _kun("threads", "--json", "--home", str(home))
    assert code == 0, err
    assert {t["thread_id"] for t in json.loads(listed)} == {TID, OTHER}

    for command, what in (
        (("rm", TID), "the trash (kun rm)"),
        (("trash",), "the trash (kun trash)"),
        (("restore", TID), "the trash (kun restore)"),
        (("gc", TID), "kun gc"),
        (("import", str(tmp_path / "nothing.tar")), "kun import"),
        (
            ("rewind", TID, "2", "--files"),
            "rewinding files of a thread whose workspace is not on this machine",
        ),
    ):
        if command[0] == "import":
            (tmp_path / "nothing.tar").write_bytes(b"")
        code, out, err = await _kun(*command, "--home", str(home))
        assert code == 1, command
        assert err == f"kun: error: {what} works on a kun home, not on a database " + (
            "(--store, [store] url)\n"
        )
        assert "Traceback" not in out + err
    assert (await _kun("replay", TID, "--home", str(home)))[0] == 0
    code, out, err = await _kun("fork", TID, "--json", "--home", str(home))
    assert code == 0, err
    forked = json.loads(out)["thread_id"]
    listed = json.loads((await _kun("threads", "--json", "--home", str(home)))[1])
    assert forked in {t["thread_id"] for t in listed}
    assert not (home / "threads").exists()


async def test_the_password_never_shows(tmp_path: Path, postgres_server: object) -> None:
    url = "postgresql://kun:hunter2@127.0.0.1:1/nowhere"
    code, out, err = await _kun("threads", "--store", url, "--home", str(tmp_path))
    assert code == 1
    assert "hunter2" not in out + err and err.count("\n") == 1
    assert err.startswith("kun: error: postgresql://kun@127.0.0.1:1/nowhere: ")
    code, _, err = await _kun("threads", "--store", "/not/a/database", "--home", str(tmp_path))
    assert code == 1 and "--store: expected a URL such as postgresql://" in err


async def test_store_goes_with_a_home_not_a_server(tmp_path: Path) -> None:
    code, _, err = await _kun(
        "--server", "http://127.0.0.1:9", "threads", "--store", "postgresql://kun@h/db"
    )
    assert code == 1 and "--store works here, not with --server" in err


async def test_hints_carry_the_store_without_its_password() -> None:
    @click.command()
    @store_option
    def probe() -> None:
        click.echo(pasteable("replay", "thr_x"))

    given = "postgresql://kun:hunter2@db.example:5433/kun?sslmode=require"
    result = CliRunner().invoke(probe, ["--store", given])
    assert result.stdout == "kun replay thr_x --store postgresql://kun@db.example:5433/kun\n"
