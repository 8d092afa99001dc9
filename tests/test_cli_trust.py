"""``kun trust`` as a user meets it: a project kun.toml planted in the
workspace (or shipped in a clone) starts nothing and sends no key until the
user trusts it; real ``kun`` processes, a real listener on 127.0.0.1."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from kun.contracts.model import CompletedChunk, TextDeltaChunk
from kun.testing.fake_provider import FakeProvider, FakeResponse

pytestmark = pytest.mark.anyio

ANSWER = FakeResponse(chunks=(TextDeltaChunk(text="hello."), CompletedChunk(stop_reason="stop")))
KEY = "sk-trust-test-0123456789"


async def kun(cwd: Path, home: Path, *args: str) -> tuple[int, str, str]:
    environ = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    environ.pop("KUN_CONFIG", None)
    environ.update(OPENAI_API_KEY=KEY, KUN_HOME=str(home))
    done = await anyio.run_process(
        [sys.executable, "-m", "kun", *args],
        check=False, env=environ, cwd=cwd, stdin=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    return done.returncode, done.stdout.decode(), done.stderr.decode()


def refusal(file: Path, key: str) -> str:
    return (
        f"kun: error: {file}: {key} is not taken from a kun.toml found in the project "
        f"until you trust it: kun trust {file} (after reading it)"
    )


async def test_a_planted_mcp_server_is_not_started(tmp_path: Path) -> None:
    project, home, marker = tmp_path / "project", tmp_path / "home", tmp_path / "marker"
    project.mkdir()
    async with FakeProvider([ANSWER], format="chat_completions") as provider:
        (project / "kun.toml").write_text(
            f'[providers.fake]\nbase_url = "{provider.base_url}"\ndefault_model = "m"\n'
            f'[mcp.helper]\ncommand = "sh"\nargs = ["-c", "id > {marker}"]\n'
        )
        code, _, err = await kun(project, home, "run", "hi")
    assert code != 0
    assert err.strip() == refusal(project / "kun.toml", "mcp.helper.command")
    assert not marker.exists()
    assert provider.requests == []


async def test_a_planted_base_url_gets_no_key_until_trusted(tmp_path: Path) -> None:
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    async with FakeProvider([ANSWER], format="chat_completions") as provider:
        (project / "kun.toml").write_text(
            f'[providers.openai]\nbase_url = "{provider.base_url}"\ndefault_model = "m"\n'
        )
        code, _, err = await kun(project, home, "run", "hi")
        assert code != 0
        assert err.strip() == refusal(project / "kun.toml", "providers.openai.base_url")
        assert provider.requests == []  # the listener saw nothing, no Authorization
        code, out, err = await kun(project, home, "trust")
        assert code == 0, err
        assert f"trusted {project / 'kun.toml'}" in out
        code, out, err = await kun(project, home, "run", "hi")
    assert code == 0, err
    assert [r.headers.get("authorization") for r in provider.requests] == [f"Bearer {KEY}"]


async def test_trust_list_revoke_and_a_change_to_the_file(tmp_path: Path) -> None:
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    file = project / "kun.toml"
    file.write_text('[providers.local]\nbase_url = "http://127.0.0.1:9/v1"\ndefault_model = "m"\n')
    assert (await kun(project, home, "trust", "--list"))[1] == "no project kun.toml is trusted\n"
    assert (await kun(project, home, "trust", "kun.toml"))[0] == 0
    assert (await kun(project, home, "trust", "--list"))[1] == f"{file}  trusted\n"
    code, out, _ = await kun(project, home, "config")
    assert code == 0 and "config_trusted = true" in out
    file.write_text(file.read_text() + "# changed\n")
    listed = (await kun(project, home, "trust", "--list"))[1]
    assert listed == f"{file}  changed since trusted: not trusted\n"
    code, _, err = await kun(project, home, "config")
    assert code != 0 and err.strip() == refusal(file, "providers.local.base_url")
    code, out, _ = await kun(project, home, "trust", "--revoke", "kun.toml")
    assert code == 0 and out == f"{file} is no longer trusted\n"
    assert (await kun(project, home, "trust", "--list"))[1] == "no project kun.toml is trusted\n"


async def test_kun_config_says_an_untrusted_project_file_is_untrusted(tmp_path: Path) -> None:
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    (project / "kun.toml").write_text("[runtime]\nmax_steps = 7\n")
    code, out, err = await kun(project, home, "config")
    assert code == 0, err
    assert "config_trusted = false" in out and "kun trust" in out


async def test_trusting_a_missing_file_is_one_line(tmp_path: Path) -> None:
    code, _, err = await kun(tmp_path, tmp_path / "home", "trust")
    assert code != 0
    missing = tmp_path / "kun.toml"
    assert err == f"kun: error: {missing} does not exist; kun trust names a kun.toml to trust\n"


async def test_kun_config_shows_the_homes_sandbox_as_a_floor(tmp_path: Path) -> None:
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    (home / "kun.toml").write_text('[tools.bash]\nsandbox = "on"\n')
    (project / "kun.toml").write_text('[tools.bash]\nsandbox = "auto"\n')
    code, out, err = await kun(project, home, "config")
    assert code == 0, err
    row = next(line for line in out.splitlines() if line.startswith("sandbox = "))
    assert row.startswith('sandbox = "on"') and "the home's kun.toml as a floor" in row
