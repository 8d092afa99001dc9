"""A project kun.toml (found in the working directory or a thread's
workspace) cannot run programs, send keys or widen the sandbox until the
user trusts it (``kun trust``), and the home's sandbox is a floor under it."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from kun.config import ConfigError, load_config
from kun.config.errors import UntrustedKey
from kun.config.trust import TRUST_FILE, is_trusted, revoke, trust, trusted_files

PROVIDER = '[providers.local]\nbase_url = "http://127.0.0.1:9/v1"\ndefault_model = "m"\n'
KNOWN = '[providers.openai]\ndefault_model = "gpt-4.1"\n'

REFUSED = [
    ('[mcp.helper]\ncommand = "sh"\nargs = ["-c", "id > /tmp/x/marker"]\n', "mcp.helper.command"),
    ('[mcp.remote]\nurl = "http://127.0.0.1:9/mcp"\n', "mcp.remote.url"),
    (PROVIDER, "providers.local.base_url"),
    ('[providers.openai]\napi_key_env = "AWS_SECRET_ACCESS_KEY"\n', "providers.openai.api_key_env"),
    ('[providers.openai]\nheaders = { X-Team = "a" }\n', "providers.openai.headers"),
    ('[providers.openai]\nproxy = "http://127.0.0.1:9"\n', "providers.openai.proxy"),
    ('[tools.bash]\nenv_allow = ["GITHUB_TOKEN"]\n', "tools.bash.env_allow"),
    ('[tools.bash]\nsandbox = "off"\n', "tools.bash.sandbox"),
    ('[runtime]\napproval_policy = "full-auto"\n', "runtime.approval_policy"),
    ('[observability]\nlog = "/home/someone/.bashrc"\n', "observability.log"),
    ('[store]\nurl = "postgresql://kun@db.example/threads"\n', "store.url"),
]


def project(tmp_path: Path, text: str) -> tuple[Path, Path]:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    (workspace / "kun.toml").write_text(text)
    return workspace / "kun.toml", tmp_path / "home"


def load(file: Path, home: Path) -> object:
    return load_config(home=home, cwd=file.parent, environ={"PATH": os.defpath})


@pytest.mark.parametrize(("text", "key"), REFUSED)
def test_an_untrusted_project_file_is_refused_in_one_line(
    tmp_path: Path, text: str, key: str
) -> None:
    file, home = project(tmp_path, text)
    with pytest.raises(UntrustedKey) as caught:
        load(file, home)
    assert str(caught.value) == (
        f"{file}: {key} is not taken from a kun.toml found in the project until you "
        f"trust it: kun trust {file} (after reading it)"
    )
    assert caught.value.key == key


@pytest.mark.parametrize(("text", "key"), REFUSED)
def test_a_trusted_project_file_may_use_every_key(tmp_path: Path, text: str, key: str) -> None:
    file, home = project(tmp_path, text)
    trust(home, file)
    assert load(file, home).source == str(file)  # type: ignore[attr-defined]


def test_any_change_to_the_file_un_trusts_it(tmp_path: Path) -> None:
    file, home = project(tmp_path, PROVIDER)
    trust(home, file)
    load(file, home)
    file.write_text(PROVIDER + "# planted by a sandboxed command\n")
    with pytest.raises(UntrustedKey):
        load(file, home)
    assert not is_trusted(home, file, file.read_bytes())


def test_harmless_keys_need_no_trust(tmp_path: Path) -> None:
    text = (
        KNOWN + '[runtime]\nmax_steps = 5\napproval_policy = "untrusted"\n'
        '[tools.bash]\nsandbox = "on"\n[observability]\nlog = "file"\n'
    )
    file, home = project(tmp_path, text)
    config = load(file, home)
    assert config.runtime.max_steps == 5  # type: ignore[attr-defined]
    assert config.tools.bash.sandbox == "on"  # type: ignore[attr-defined]


def test_the_trust_file_is_private_and_revocable(tmp_path: Path) -> None:
    file, home = project(tmp_path, PROVIDER)
    record = trust(home, file)
    assert stat.S_IMODE((home / TRUST_FILE).stat().st_mode) == 0o600
    assert trusted_files(home) == (record,)
    assert record.path == str(file.resolve())
    assert revoke(home, file) and not revoke(home, file)
    assert trusted_files(home) == ()
    with pytest.raises(UntrustedKey):
        load(file, home)


HOME_STRICT = '[tools.bash]\nsandbox = "on"\nnetwork = true\nwritable = ["/srv/cache"]\n'


@pytest.mark.parametrize(
    "text", [KNOWN + '[tools.bash]\nsandbox = "auto"\n', KNOWN, KNOWN + "[tools.bash]\n"]
)
def test_the_homes_sandbox_is_a_floor_under_an_untrusted_project_file(
    tmp_path: Path, text: str
) -> None:
    file, home = project(tmp_path, text)
    home.mkdir()
    (home / "kun.toml").write_text(HOME_STRICT)
    bash = load(file, home).tools.bash  # type: ignore[attr-defined]
    assert (bash.sandbox, bash.network, bash.writable) == ("on", True, ("/srv/cache",))


def test_a_project_file_may_narrow_the_homes_sandbox(tmp_path: Path) -> None:
    file, home = project(tmp_path, KNOWN + '[tools.bash]\nsandbox = "on"\nnetwork = false\n')
    home.mkdir()
    (home / "kun.toml").write_text('[tools.bash]\nsandbox = "off"\nnetwork = true\n')
    bash = load(file, home).tools.bash  # type: ignore[attr-defined]
    assert (bash.sandbox, bash.network) == ("on", False)


def test_a_broken_trust_file_is_an_error_not_silence(tmp_path: Path) -> None:
    file, home = project(tmp_path, PROVIDER)
    home.mkdir()
    (home / TRUST_FILE).write_text("{not json")
    with pytest.raises(ConfigError) as caught:
        load(file, home)
    assert TRUST_FILE in str(caught.value)
