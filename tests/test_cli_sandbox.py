"""``kun run`` with the sandbox, as a user runs it (a real process, a
provider on 127.0.0.1): under ``full-auto`` a command that writes outside
the workspace is refused and says ``sandbox_denied``; ``sandbox = "off"``
lets it; without a ``bwrap`` that starts, kun refuses in one line before
the model is asked anything."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from kun.contracts.model import CompletedChunk, TextDeltaChunk
from kun.model.scripted import tool_reply
from kun.testing.fake_provider import FakeProvider, FakeResponse

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
needs_bwrap = pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap is not installed"
)

DONE = FakeResponse(chunks=(TextDeltaChunk(text="done"), CompletedChunk(stop_reason="stop")))


@pytest.fixture
def outside() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="kun-cli-sandbox-", dir="/var/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _config(tmp_path: Path, base_url: str, bash_table: str = "") -> Path:
    config = tmp_path / "kun.toml"
    config.write_text(
        'default_provider = "fake"\n\n[providers.fake]\n'
        f'base_url = "{base_url}"\nendpoint_format = "chat_completions"\n'
        f'default_model = "fake-model"\n{bash_table}'
    )
    return config


async def _kun(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    environ = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    environ.update(env or {})
    result = await anyio.run_process(
        [sys.executable, "-m", "kun", *args],
        check=False,
        env=environ,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    return result.returncode, result.stdout.decode(), result.stderr.decode()


async def _run_full_auto(
    tmp_path: Path, command: str, bash_table: str = "", env: dict[str, str] | None = None
) -> tuple[int, str, str, FakeProvider]:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    script = [FakeResponse(chunks=tuple(tool_reply("bash", {"command": command}))), DONE]
    async with FakeProvider(script, format="chat_completions") as provider:
        code, out, err = await _kun(
            "run", "go", "--approval", "full-auto",
            "--config", str(_config(tmp_path, provider.base_url, bash_table)),
            "--home", str(tmp_path / "home"), "--workspace", str(workspace),
            env=env,
        )  # fmt: skip
    return code, out, err, provider


@needs_bwrap
async def test_full_auto_runs_bash_sandboxed(tmp_path: Path, outside: Path) -> None:
    target = outside / "escaped.txt"
    code, _, err, provider = await _run_full_auto(
        tmp_path, f"echo x > {target}; echo x > inside.txt"
    )
    assert code == 0, err
    assert not target.exists()
    assert (tmp_path / "ws" / "inside.txt").exists()
    result = str(provider.requests[1].json["messages"])
    assert "[sandbox_denied:" in result and "Read-only file system" in result


@needs_bwrap
async def test_sandbox_off_lets_full_auto_write_anywhere(tmp_path: Path, outside: Path) -> None:
    target = outside / "escaped.txt"
    code, _, err, _ = await _run_full_auto(
        tmp_path, f"echo x > {target}", '\n[tools.bash]\nsandbox = "off"\n'
    )
    assert code == 0, err
    assert target.exists()


async def test_without_bwrap_full_auto_refuses_in_one_line_before_asking_the_model(
    tmp_path: Path,
) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    code, out, err, provider = await _run_full_auto(
        tmp_path, "echo ran > ran.txt", env={"PATH": str(empty)}
    )
    assert code != 0 and out == ""
    assert err.count("\n") == 1 and err.startswith("kun: error: ")
    assert "apt-get install bubblewrap" in err and 'sandbox = "off"' in err
    assert provider.requests == []
    assert not (tmp_path / "ws" / "ran.txt").exists()


async def test_the_demo_needs_no_bwrap(tmp_path: Path) -> None:
    """The README's quick start, ``kun demo``, on a machine without
    bubblewrap: the demo runs ``on-request``, which needs no sandbox."""
    empty = tmp_path / "bin"
    empty.mkdir()
    code, out, err = await _kun("demo", "--home", str(tmp_path / "home"), env={"PATH": str(empty)})
    assert code == 0, err
    assert "bubblewrap" not in out + err


@needs_bwrap
async def test_continuing_a_full_auto_thread_without_bwrap_refuses_before_the_turn(
    tmp_path: Path,
) -> None:
    code, _, err, _ = await _run_full_auto(tmp_path, "true")
    assert code == 0, err
    thread_id = err.split()[1]
    empty = tmp_path / "bin"
    empty.mkdir()
    async with FakeProvider([DONE], format="chat_completions") as provider:
        code, out, err = await _kun(
            "run", "again", "--thread", thread_id,
            "--config", str(_config(tmp_path, provider.base_url)),
            "--home", str(tmp_path / "home"),
            env={"PATH": str(empty)},
        )  # fmt: skip
    assert code != 0 and out == ""
    assert err.count("\n") == 1 and "apt-get install bubblewrap" in err
    assert provider.requests == []
