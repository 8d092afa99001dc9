"""Settings a user can reach (issue 9, item 6): ``[runtime]`` in kun.toml and
the matching flags reach the turns (a flag beats the file), ``kun config``
says where each value came from and never shows a secret, a bad value is
one ``kun: error:`` line, and an unknown cost reads ``unknown``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import anyio
import msgspec
import pytest
from click.testing import CliRunner

from kun.contracts import events as ev
from kun.contracts.context import TurnContext
from kun.contracts.model import CompletedChunk, TextDeltaChunk, UsageChunk
from kun.contracts.usage import UsageSnapshot, UsageTotals
from kun.domain.reduce import replay
from kun.domain.usage_report import render_usage
from kun.entry import cli
from kun.model.scripted import tool_reply
from kun.store.jsonl import JsonlEventStore
from kun.testing.fake_provider import FakeProvider, FakeResponse
from tests.terminal_support import answer, finish, only_thread, serve, spawn, state_of, write_config

ANSWER = FakeResponse(chunks=(TextDeltaChunk(text="done."), CompletedChunk(stop_reason="stop")))
READ = FakeResponse(chunks=tuple(tool_reply("read_file", {"path": "a.py"})))
SECRET = "sk-test-very-secret-value-0123456789"


def _config(tmp_path: Path, base_url: str, runtime: str = "") -> Path:
    config = tmp_path / "kun.toml"
    config.write_text(
        'default_provider = "fake"\n\n[providers.fake]\n'
        f'base_url = "{base_url}"\nendpoint_format = "chat_completions"\n'
        'default_model = "fake-model"\napi_key_env = "FAKE_KEY"\n\n'
        f"[runtime]\n{runtime}"
    )
    return config


async def _kun(*args: str) -> tuple[int, str, str]:
    environ = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    environ["FAKE_KEY"] = SECRET
    result = await anyio.run_process(
        [sys.executable, "-m", "kun", *args],
        check=False,
        env=environ,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    return result.returncode, result.stdout.decode(), result.stderr.decode()


async def _run(tmp_path: Path, runtime: str, *flags: str) -> tuple[int, str, list[ev.Event]]:
    """``kun run`` of a turn that reads a file, then answers (two steps)."""
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    (workspace / "a.py").write_text("print('a')\n")
    (workspace / "AGENTS.md").write_text("Always answer in one line.\n")
    home = tmp_path / "home"
    async with FakeProvider([READ, ANSWER], format="chat_completions") as provider:
        code, _, err = await _kun(
            "run", "what does a.py print?",
            "--config", str(_config(tmp_path, provider.base_url, runtime)),
            "--home", str(home), "--workspace", str(workspace), *flags,
        )  # fmt: skip
        bodies = [msgspec.json.decode(r.body) for r in provider.requests]
    thread_id = err.split()[1]
    events = list(JsonlEventStore(home).read(thread_id))
    system = [m["content"] for m in bodies[0]["messages"] if m["role"] == "system"]
    return code, "\n".join(system), events


@pytest.mark.anyio
async def test_the_files_step_limit_fails_a_two_step_turn(tmp_path: Path) -> None:
    runtime = 'max_steps = 1\napproval_policy = "never"\nsystem_prompt = "You are Zed."\n'
    code, system, events = await _run(tmp_path, runtime)
    state = replay(events)
    assert code == 1
    failed = [e for e in events if isinstance(e, ev.TurnFailed)]
    assert [e.code for e in failed] == ["turn_step_limit"]
    assert state.settings.approval_policy == "never", "the file's policy for a new thread"
    assert system.startswith("You are Zed.\n")
    assert "Always answer in one line." in system, "AGENTS.md reached the wire"


@pytest.mark.anyio
async def test_flags_beat_the_file(tmp_path: Path) -> None:
    runtime = 'max_steps = 1\nreasoning_effort = "low"\nsystem_prompt = "You are Zed."\n'
    code, system, events = await _run(
        tmp_path, runtime, "--max-steps", "2", "--system", "You are Ada.",
        "--reasoning-effort", "high",
    )  # fmt: skip
    assert code == 0
    assert "You are Ada." in system and "Zed" not in system
    (started,) = [e for e in events if isinstance(e, ev.TurnStarted)]
    assert isinstance(started.context, TurnContext)
    assert started.context.system_prompt == "You are Ada."
    assert started.context.reasoning_effort == "high"


def _cli(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), env=env)
    return result.exit_code, result.stdout, result.stderr


def test_kun_config_shows_each_value_and_its_source_never_a_secret(tmp_path: Path) -> None:
    config = _config(tmp_path, "http://127.0.0.1:9/v1", "max_steps = 7\n")
    code, out, err = _cli(
        "config", "--config", str(config), "--home", str(tmp_path / "h"), "--max-cost", "2.5",
        env={"FAKE_KEY": SECRET, "KUN_CONFIG": ""},
    )  # fmt: skip
    assert code == 0, err
    lines = {line.split(" = ")[0]: line for line in out.splitlines() if " = " in line}
    assert lines["max_steps"].endswith(f"# {config}")
    assert lines["max_cost_usd"].endswith("# --max-cost") and "2.5" in lines["max_cost_usd"]
    assert lines["approval_policy"].endswith("# default")
    assert lines["home"].endswith("# --home") and lines["config_file"].endswith("# --config")
    assert '"FAKE_KEY"' in lines["api_key_env"] and "$FAKE_KEY is set" in lines["api_key_env"]
    assert SECRET not in out and SECRET[:12] not in out


def test_every_turn_is_bounded_by_default_and_a_user_can_raise_the_limits(
    tmp_path: Path,
) -> None:
    home = str(tmp_path / "h")
    code, out, err = _cli("config", "--home", home, env={"KUN_CONFIG": ""})
    assert code == 0, err
    lines = {line.split(" = ")[0]: line for line in out.splitlines() if " = " in line}
    assert lines["max_steps"].startswith("max_steps = 200 ") and lines["max_steps"].endswith(
        "# default"
    )
    assert lines["max_turn_tokens"].startswith("max_turn_tokens = 10000000 ")
    config = _config(tmp_path, "http://127.0.0.1:9/v1", "max_turn_tokens = 50000000\n")
    code, out, err = _cli(
        "config", "--config", str(config), "--home", home, "--max-steps", "1000",
        env={"FAKE_KEY": SECRET, "KUN_CONFIG": ""},
    )  # fmt: skip
    assert code == 0, err
    lines = {line.split(" = ")[0]: line for line in out.splitlines() if " = " in line}
    assert lines["max_steps"].startswith("max_steps = 1000 ")
    assert lines["max_steps"].endswith("# --max-steps")
    assert lines["max_turn_tokens"].startswith("max_turn_tokens = 50000000 ")
    assert lines["max_turn_tokens"].endswith(f"# {config}")


@pytest.mark.anyio
async def test_the_turn_token_flag_fails_a_two_step_turn(tmp_path: Path) -> None:
    usage = UsageChunk(usage=UsageSnapshot(prompt_tokens=900, completion_tokens=10))
    call = tool_reply("read_file", {"path": "a.py"})
    read = FakeResponse(chunks=(*call[:-1], usage, call[-1]))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.py").write_text("print('a')\n")
    async with FakeProvider([read, ANSWER], format="chat_completions") as provider:
        code, out, err = await _kun(
            "run", "what does a.py print?", "--max-turn-tokens", "500",
            "--config", str(_config(tmp_path, provider.base_url)),
            "--home", str(tmp_path / "home"), "--workspace", str(workspace),
        )  # fmt: skip
    assert code == 1, err
    (line,) = [row for row in out.splitlines() if "turn_token_limit" in row]
    assert line.endswith("the turn used 910 tokens, its limit is 500 (max_turn_tokens)")
    assert line.startswith("error [turn_token_limit]: ")


def test_kun_config_shows_the_sandbox_keys_and_their_source(tmp_path: Path) -> None:
    config = _config(tmp_path, "http://127.0.0.1:9/v1", "")
    config.write_text(config.read_text() + '\n[tools.bash]\nsandbox = "off"\n')
    code, out, err = _cli("config", "--config", str(config), "--home", str(tmp_path / "h"))
    assert code == 0, err
    lines = {line.split(" = ")[0]: line for line in out.splitlines() if " = " in line}
    assert lines["sandbox"].startswith('sandbox = "off"') and lines["sandbox"].endswith(
        f"# {config}"
    )
    assert lines["network"].startswith("network = false") and lines["network"].endswith("# default")
    assert lines["writable"].startswith("writable = []")


def test_kun_config_names_the_environment_when_no_file_is_found(tmp_path: Path) -> None:
    code, out, _ = _cli(
        "config", "--home", str(tmp_path),
        env={"KUN_CONFIG": "", "ANTHROPIC_API_KEY": SECRET, "OPENAI_API_KEY": ""},
    )  # fmt: skip
    assert code == 0
    assert "none found" in out and "$ANTHROPIC_API_KEY is set" in out
    assert SECRET not in out


@pytest.mark.parametrize(
    ("runtime", "key"),
    [
        ("max_steps = 0\n", "runtime.max_steps"),
        ('approval_policy = "yolo"\n', "runtime.approval_policy"),
        ('reasoning_effort = "VERY HIGH"\n', "runtime.reasoning_effort"),
        ('max_cost_usd = "1$"\n', "runtime.max_cost_usd"),
        ("max_step = 3\n", "runtime.max_step"),
        ("max_turn_tokens = 0\n", "runtime.max_turn_tokens"),
    ],
)
def test_a_bad_runtime_value_is_one_error_line(tmp_path: Path, runtime: str, key: str) -> None:
    config = _config(tmp_path, "http://127.0.0.1:9/v1", runtime)
    code, out, err = _cli("config", "--config", str(config))
    assert code == 1 and out == ""
    assert err.count("\n") == 1 and err.startswith(f"kun: error: {config}: {key}: ")
    assert "expected" in err


@pytest.mark.parametrize(
    "flags",
    [
        ("--max-steps", "0"),
        ("--reasoning-effort", "Max!"),
        ("--system", " "),
        ("--max-cost", "-1"),
        ("--max-turn-tokens", "0"),
    ],
)
def test_a_bad_flag_is_one_error_line(flags: tuple[str, str]) -> None:
    code, _, err = _cli("run", "hi", *flags)
    assert code == 1 and err.count("\n") == 1 and err.startswith("kun: error: ")


def test_a_runtime_flag_before_the_command_is_refused() -> None:
    code, _, err = _cli("--max-steps", "3", "threads")
    assert code == 1 and "go after the command" in err


def test_an_unknown_cost_reads_unknown_in_kun_usage() -> None:
    unpriced = UsageTotals(calls=2, prompt_tokens=10, unpriced_calls=2)
    priced = UsageTotals(calls=1, prompt_tokens=10, cost_usd=0.5)
    (row,) = [r for r in render_usage(["A", "B"], [unpriced, priced]) if r.startswith("cost")]
    assert row.split()[2:] == ["unknown", "0.500000", "unknown"]
    assert "0.000000" not in row


def test_the_session_takes_the_runtime_flags_and_sends_agents_md(tmp_path: Path) -> None:
    with serve([answer("hello there")]) as provider:
        config = write_config(tmp_path, provider.base_url)
        with config.open("a") as file:
            file.write('\n[runtime]\napproval_policy = "never"\nsystem_prompt = "You are Zed."\n')
        workspace = tmp_path / "ws"
        workspace.mkdir()
        (workspace / "AGENTS.md").write_text("Say hello.\n")
        child = spawn(
            ["chat", "--system", "You are Ada.", "--max-steps", "3",
             "--config", str(config), "--home", str(tmp_path / "home")],
            cwd=workspace,
        )  # fmt: skip
        child.expect("Ctrl-D leaves")
        child.send("hi\r")
        child.expect("turn completed")
        child.send("\x04")
        code, text = finish(child)
        bodies = [r.json for r in provider.requests if r.method == "POST"]
    assert code == 0, text
    system = [m["content"] for m in bodies[0]["messages"] if m["role"] == "system"]
    assert system[0] == "You are Ada." and "Say hello." in system[1]
    home = tmp_path / "home"
    assert state_of(home, only_thread(home)).settings.approval_policy == "never"
