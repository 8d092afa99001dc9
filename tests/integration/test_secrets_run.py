"""No secret reaches ``events.jsonl``, stdout or stderr of ``kun run``, in any
form: a key with a trailing newline, a relay that echoes the key, a key
that cannot be sent, and commands the model runs (``env``, ``printenv``,
``cat .env``)."""

from __future__ import annotations

import base64
import json
import os
import sys
from pathlib import Path

import anyio
import pytest

from kun.app.session import open_service, tool_host
from kun.config import parse_config
from kun.contracts import events as ev
from kun.contracts.items import ToolResult
from kun.contracts.model import CompletedChunk, TextDeltaChunk
from kun.contracts.threads import ThreadSettings
from kun.domain.reduce import replay
from kun.model.factory import build_router
from kun.model.scripted import tool_reply
from kun.store.jsonl import JsonlEventStore
from kun.testing.fake_provider import FakeProvider, FakeResponse
from tests.integration.secret_forms import leaks

pytestmark = pytest.mark.anyio

KEY = "sk-proj-Zq81xVb3Kp0sT7uW2yE5"
OTHER = "ghp_R2d2C3po0Bb8Kx5Lm9Qw7Er4Ty1Ui6"
DONE = FakeResponse(chunks=(TextDeltaChunk(text="done."), CompletedChunk(stop_reason="stop")))


class Run:
    def __init__(self, code: int, out: str, err: str, home: Path) -> None:
        self.code, self.out, self.err, self.home = code, out, err, home

    @property
    def log(self) -> bytes:
        return b"".join(p.read_bytes() for p in sorted(self.home.rglob("*.jsonl")))

    def leaks(self, secret: str) -> list[str]:
        return leaks(secret, self.log, self.out, self.err)


async def _kun_run(
    tmp_path: Path,
    script: list[FakeResponse],
    env: dict[str, str],
    toml: str = "",
) -> tuple[Run, FakeProvider]:
    """``kun run`` (a subprocess, no terminal) on the loopback provider."""
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    home = tmp_path / "home"
    environ = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    environ.update(env)
    async with FakeProvider(script, format="chat_completions") as provider:
        config = tmp_path / "kun.toml"
        config.write_text(
            'default_provider = "fake"\n\n[providers.fake]\n'
            f'base_url = "{provider.base_url}"\ndefault_model = "fake-model"\n'
            f'api_key_env = "FAKE_LLM_API_KEY"\n{toml}'
        )
        command = [
            sys.executable, "-m", "kun", "run", "go", "--approval", "auto",
            "--config", str(config), "--home", str(home), "--workspace", str(workspace),
        ]  # fmt: skip
        result = await anyio.run_process(command, check=False, env=environ)
    return Run(result.returncode, result.stdout.decode(), result.stderr.decode(), home), provider


async def test_a_key_with_a_trailing_newline_is_stripped_sent_once_and_never_shown(
    tmp_path: Path,
) -> None:
    run, provider = await _kun_run(tmp_path, [DONE], {"FAKE_LLM_API_KEY": KEY + "\n"})
    assert run.code == 0, run.err
    assert [r.headers["authorization"] for r in provider.requests] == [f"Bearer {KEY}"]
    assert "FAKE_LLM_API_KEY" in run.err and "newline" in run.err
    assert not run.leaks(KEY + "\n")


async def test_a_key_echoed_by_a_relay_is_never_shown(tmp_path: Path) -> None:
    basic = base64.b64encode(f"user:{KEY}".encode()).decode()
    message = f"invalid key {KEY}\n (Basic {basic}) {json.dumps(KEY + chr(1))}"
    body = json.dumps({"error": {"message": message, "type": "authentication_error"}})
    refusal = FakeResponse(status=401, body=body.encode())
    run, provider = await _kun_run(tmp_path, [refusal], {"FAKE_LLM_API_KEY": KEY + "\n"})
    assert run.code == 1 and len(provider.requests) == 1
    assert "[redacted]" in run.out
    assert not run.leaks(KEY + "\n")


async def test_a_key_with_a_control_character_is_one_clear_line(tmp_path: Path) -> None:
    bad = f"{KEY[:10]}\x1b{KEY[10:]}"
    run, provider = await _kun_run(tmp_path, [DONE], {"FAKE_LLM_API_KEY": bad})
    assert run.code == 1 and run.out == "" and provider.requests == []
    assert run.err.startswith("kun: error: ") and run.err.count("\n") == 1
    assert "FAKE_LLM_API_KEY" in run.err and "control character" in run.err
    assert not run.leaks(bad) and KEY[:10] not in run.err and KEY[10:] not in run.err


async def _turn_with_approvals(
    tmp_path: Path, script: list[FakeResponse], environ: dict[str, str], toml: str
) -> tuple[bytes, list[str], FakeProvider]:
    """A real turn in this process: the HTTP client on the loopback
    provider, the tools as ``kun run`` builds them (:func:`tool_host`), the
    JSONL log; every approval granted. The log's bytes, the tool results as
    recorded, and the provider (what it was sent)."""
    workspace, home = tmp_path / "ws", tmp_path / "home"
    async with FakeProvider(script, format="chat_completions") as provider:
        config = parse_config(
            "[providers.fake]\n"
            f'base_url = "{provider.base_url}"\ndefault_model = "fake-model"\n'
            f'api_key_env = "FAKE_LLM_API_KEY"\n{toml}',
            "kun.toml",
        )
        router = build_router(config, environ=environ)
        tools = tool_host(config, environ)
        async with router, open_service(home, router.select(), tools=tools) as service:
            settings = ThreadSettings(workspace=str(workspace), approval_policy="on-request")
            thread_id = await service.create_thread(settings)
            turn_id = await service.start_turn(thread_id, "go", disable_user_input=True)
            with anyio.fail_after(30):
                async for event in service.recorder.subscribe(thread_id):
                    if isinstance(event, ev.ApprovalRequested):
                        await service.answer_approval(event.approval_id, "approved")
                    if isinstance(event, ev.TurnCompleted | ev.TurnFailed | ev.TurnAborted):
                        break
                turn = await service.wait_turn(thread_id, turn_id)
    assert turn.status == "completed"
    log = b"".join(p.read_bytes() for p in sorted(home.rglob("*.jsonl")))
    results = [i.output for t in replay(JsonlEventStore(home).read(thread_id)).turns
               for i in t.items if isinstance(i, ToolResult)]  # fmt: skip
    return log, results, provider


async def test_commands_the_model_runs_never_see_or_show_a_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / ".env").write_text(f"FAKE_LLM_API_KEY={KEY}\nGH={OTHER}\n")
    commands = [
        "env",
        "printenv FAKE_LLM_API_KEY; printenv OPENAI_API_KEY; printenv GITHUB_TOKEN; echo end",
        "cat .env; . ./.env && echo $FAKE_LLM_API_KEY | base64; echo $GH | base64",
        'test -n "$DEPLOY_TOKEN" && echo "deploy token passed"; echo "$HOME" "$LANG"',
    ]
    script = [FakeResponse(chunks=tuple(tool_reply("bash", {"command": c}))) for c in commands]
    environ = {
        "FAKE_LLM_API_KEY": KEY,
        "OPENAI_API_KEY": KEY + "-openai",
        "GITHUB_TOKEN": OTHER,
        "DEPLOY_TOKEN": "dpl_" + OTHER[::-1],
        "LANG": "C.UTF-8",
        "HOME": str(tmp_path),  # no login profile of this machine's user
    }
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    toml = '\n[tools.bash]\nenv_allow = ["DEPLOY_TOKEN"]\n'
    log, results, provider = await _turn_with_approvals(tmp_path, [*script, DONE], environ, toml)
    assert len(results) == 4
    assert "PATH=" in results[0] and "FAKE_LLM_API_KEY" not in results[0]
    assert "GITHUB_TOKEN" not in results[0] and "DEPLOY_TOKEN=[redacted]" in results[0]
    assert results[1].splitlines()[0] == "end"
    assert results[2].count("[redacted]") == 4
    assert "deploy token passed" in results[3] and "C.UTF-8" in results[3]
    sent = [json.dumps(r.json) for r in provider.requests]
    for name in ("FAKE_LLM_API_KEY", "OPENAI_API_KEY", "GITHUB_TOKEN", "DEPLOY_TOKEN"):
        assert not leaks(environ[name], log, *results, *sent), name
