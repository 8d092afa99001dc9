"""``open_local`` composes the engine as ``kun run`` does: the kun.toml of
the thread's workspace (when trusted), its ``[runtime]`` settings under the
flags given; an untrusted project file is refused on the first call that
runs a turn, and reads never get that far."""

from __future__ import annotations

from pathlib import Path

import pytest

from kun.app.local import open_local
from kun.app.overrides import RuntimeFlags
from kun.app.requests import CreateThread, StartTurn, UpdateThread
from kun.config.errors import UntrustedKey
from kun.config.trust import trust
from kun.tools.sandbox import SandboxUnavailable

pytestmark = pytest.mark.anyio

PROJECT = (
    '[providers.local]\nbase_url = "http://127.0.0.1:9/v1"\ndefault_model = "m"\n'
    "[runtime]\nmax_steps = 7\n"
)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("KUN_CONFIG", raising=False)
    workspace = tmp_path / "project"
    workspace.mkdir()
    (workspace / "kun.toml").write_text(PROJECT)
    return workspace


async def test_the_threads_workspace_config_is_the_engines(tmp_path: Path, project: Path) -> None:
    home = tmp_path / "home"
    trust(home, project / "kun.toml")
    async with open_local(home) as kun:
        created = await kun.create_thread(CreateThread(workspace=str(project)))
    assert created.limits.max_steps == 7 and created.settings.provider == "local"
    async with open_local(home, flags=RuntimeFlags(max_steps=3)) as kun:
        assert kun.engine is None
        changed = await kun.update_thread(created.thread_id, UpdateThread(title="t"))
        assert kun.engine is not None
    assert changed.limits.max_steps == 3 and changed.settings.title == "t"


async def test_an_untrusted_project_file_is_refused_when_a_turn_needs_it(
    tmp_path: Path, project: Path
) -> None:
    home = tmp_path / "home"
    async with open_local(home) as kun:
        with pytest.raises(UntrustedKey):
            await kun.create_thread(CreateThread(workspace=str(project)))
        assert kun.engine is None and (await kun.threads()).threads == []


async def test_a_turn_that_needs_a_sandbox_here_is_refused_before_it_starts(
    tmp_path: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    trust(home, project / "kun.toml")
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    async with open_local(home) as kun:
        created = await kun.create_thread(CreateThread(workspace=str(project)))
        assert kun.config_source == str(project / "kun.toml")
        await kun.update_thread(created.thread_id, UpdateThread(approval_policy="full-auto"))
        with pytest.raises(SandboxUnavailable, match="bubblewrap"):
            await kun.start_turn(created.thread_id, StartTurn(text="go"))
        assert (await kun.thread(created.thread_id)).turns == ()
