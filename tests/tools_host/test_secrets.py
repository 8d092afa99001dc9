"""Commands the model runs get kun's environment without its secrets, and no
tool result carries a secret kun knows of, whatever the tool read."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import msgspec
import pytest

from kun.app.session import tool_host
from kun.config import parse_config
from kun.tools import ToolHost, ToolOutput
from kun.tools.environment import ToolEnvironment
from tests.integration.secret_forms import leaks
from tests.tools_host.support import context

pytestmark = pytest.mark.anyio

KEY = "sk-proj-Zq81xVb3Kp0sT7uW2yE5"
GH = "ghp_R2d2C3po0Bb8Kx5Lm9Qw7Er4Ty1Ui6"

WITHHELD = [
    "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "openai_api_key", "MY_APIKEY", "AWS_SECRET_ACCESS_KEY",
    "STRIPE_KEY", "GITHUB_TOKEN", "GH_TOKEN", "AWS_SESSION_TOKEN", "HF_TOKEN",
    "ACTIONS_RUNTIME_TOKEN", "GHTOKEN", "CLIENT_SECRET", "JWT_SECRET_B64", "PGPASSWORD",
    "DB_PASSWORD", "GPG_PASSPHRASE", "MYSQL_PWD", "NPM_CONFIG__AUTH", "SESSION_COOKIE",
]  # fmt: skip
KEPT = [
    "PATH", "HOME", "LANG", "LC_ALL", "TERM", "USER", "SHELL", "PWD", "OLDPWD", "TMPDIR",
    "SSH_AUTH_SOCK", "TOKENIZERS_PARALLELISM", "AWS_ACCESS_KEY_ID", "AWS_REGION",
    "GOOGLE_APPLICATION_CREDENTIALS", "KEYBOARD_LAYOUT", "VIRTUAL_ENV", "OPENAI_BASE_URL",
]  # fmt: skip


@pytest.mark.parametrize("name", WITHHELD)
def test_secret_looking_variables_are_withheld(name: str) -> None:
    assert ToolEnvironment().withholds(name)
    assert not ToolEnvironment(allow=frozenset({name})).withholds(name)


@pytest.mark.parametrize("name", KEPT)
def test_ordinary_variables_are_passed_on(name: str) -> None:
    assert not ToolEnvironment().withholds(name)


def _host(environ: dict[str, str], toml: str = "") -> ToolHost:
    config = parse_config(
        '[providers.work]\nbase_url = "https://llm.example.test/v1"\n'
        f'default_model = "m"\napi_key_env = "WORK_LLM"\n{toml}',
        "kun.toml",
    )
    return tool_host(config, environ)


async def _run(host: ToolHost, ws: Path, name: str, **args: object) -> ToolOutput:
    return await host.execute(name, msgspec.json.encode(args), context(ws))


async def test_bash_env_shows_no_key(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    environ = {"WORK_LLM": KEY, "OPENAI_API_KEY": KEY + "-2", "GITHUB_TOKEN": GH, "LANG": "C"}
    for name, value in {**environ, "HOME": str(ws)}.items():
        monkeypatch.setenv(name, value)
    host = _host(environ)
    listed = await _run(host, ws, "bash", command="env")
    assert "LANG=C" in listed.output and "PATH=" in listed.output
    for name in ("WORK_LLM", "OPENAI_API_KEY", "GITHUB_TOKEN"):
        assert f"{name}=" not in listed.output
    asked = await _run(host, ws, "bash", command="printenv OPENAI_API_KEY WORK_LLM; echo rc=$?")
    assert asked.output.startswith("rc=1")
    for secret in (KEY, KEY + "-2", GH):
        assert not leaks(secret, listed.output, asked.output)


async def test_an_allow_listed_variable_passes_but_its_value_is_redacted(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", GH)
    monkeypatch.setenv("WORK_LLM", KEY)
    monkeypatch.setenv("HOME", str(ws))
    host = _host({"GITHUB_TOKEN": GH}, '\n[tools.bash]\nenv_allow = ["GITHUB_TOKEN"]\n')
    out = await _run(host, ws, "bash", command='printenv GITHUB_TOKEN; echo "${#GITHUB_TOKEN}"')
    assert out.output.startswith(f"[redacted]\n{len(GH)}\n"), out.output
    gone = await _run(host, ws, "bash", command="printenv WORK_LLM; echo rc=$?")
    assert gone.output.startswith("rc=1")


async def test_a_known_secret_is_redacted_from_any_tool_output(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(ws))
    host = _host({"WORK_LLM": KEY + "\n", "DEPLOY_TOKEN": GH})
    basic = base64.b64encode(f"ci:{KEY}".encode()).decode()
    (ws / "config.json").write_text(json.dumps({"key": KEY + "\n", "auth": f"Basic {basic}"}))
    (ws / ".env").write_text(f"export WORK_LLM={KEY}\nexport OTHER={GH}\n")
    outputs = [
        await _run(host, ws, "read_file", path="config.json"),
        await _run(host, ws, "read_file", path=".env"),
        await _run(host, ws, "grep", pattern="WORK_LLM", path="."),
        await _run(host, ws, "bash", command=". ./.env && echo $WORK_LLM $OTHER"),
        await _run(host, ws, "bash", command=". ./.env && printf %s $WORK_LLM | base64"),
        await _run(host, ws, "bash", command=f"echo {KEY[:10]}' '{KEY[10:]} | tr -d ' '"),
    ]
    texts = [o.output for o in outputs]
    assert all("[redacted]" in text for text in texts), texts
    assert not leaks(KEY + "\n", *texts) and not leaks(GH, *texts)


async def test_without_secrets_results_are_untouched(ws: Path) -> None:
    host = _host({"LANG": "C"})
    (ws / "a.txt").write_text("https://x.test/?token=abc sk-not-a-known-key\n")
    out = await _run(host, ws, "read_file", path="a.txt")
    assert "https://x.test/?token=abc sk-not-a-known-key" in out.output


async def test_a_session_opened_with_a_config_keeps_its_key_from_the_tools(
    ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kun.app.session import open_service
    from kun.model.scripted import ScriptedModelClient

    monkeypatch.setenv("WORK_LLM", KEY)
    monkeypatch.setenv("HOME", str(ws))
    config = parse_config(
        '[providers.work]\nbase_url = "https://llm.example.test/v1"\n'
        'default_model = "m"\napi_key_env = "WORK_LLM"\n',
        "kun.toml",
    )
    (ws / "notes.txt").write_text(f"key: {KEY}\n")
    async with open_service(tmp_path / "home", ScriptedModelClient([]), config=config) as service:
        read = await service.tools.execute(
            "read_file", msgspec.json.encode({"path": "notes.txt"}), context(ws)
        )
        env = await service.tools.execute(
            "bash", msgspec.json.encode({"command": "printenv WORK_LLM; echo rc=$?"}), context(ws)
        )
    assert "[redacted]" in read.output and not leaks(KEY, read.output)
    assert env.output.startswith("rc=1"), env.output
