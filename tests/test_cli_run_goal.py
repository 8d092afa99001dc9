"""``kun run --goal`` end to end against a loopback provider, in process so
the resume timers run on a fake clock (``kun.runtime.resume.clock_sleep``)."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest
from click.testing import CliRunner

from kun.app.connect import LocalTarget
from kun.cli.run import RunOptions, run_prompt
from kun.contracts.items import UserMessage
from kun.domain.reduce import replay
from kun.entry import cli
from kun.model.scripted import text_reply, tool_reply
from kun.runtime import resume
from kun.runtime.service import TurnService
from kun.store.jsonl import JsonlEventStore
from kun.testing.fake_provider import FakeProvider
from tests.cli_support import invoked
from tests.test_cli_run import _config, _kun, _workspace

pytestmark = pytest.mark.anyio


@pytest.fixture
def delays(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Every resume wait asked for; none is waited for."""
    asked: list[float] = []

    async def instant(seconds: float) -> None:
        asked.append(seconds)

    monkeypatch.setattr(resume, "clock_sleep", instant)
    return asked


def _options(tmp_path: Path, base_url: str, **goal: object) -> RunOptions:
    _config(tmp_path, base_url)
    return RunOptions(
        prompt="make a.py print A",
        thread_id=None,
        provider=None,
        model=None,
        workspace=tmp_path / "ws",
        approval=None,
        **goal,  # type: ignore[arg-type]
    )


async def test_run_goal_resumes_until_the_model_completes_it(
    tmp_path: Path, delays: list[float], capsys: pytest.CaptureFixture[str]
) -> None:
    _workspace(tmp_path)
    script = [
        tool_reply("read_file", {"path": "a.py"}),
        text_reply("Read it; more to do."),
        tool_reply("update_goal", {"status": "complete"}),
        text_reply("All done."),
    ]
    async with FakeProvider(script, format="chat_completions") as provider:
        options = _options(tmp_path, provider.base_url, goal="make a.py print A", goal_budget=10**9)
        result = await run_prompt(_target(tmp_path), options)
    assert not result.failed(options)
    assert result.goal is not None and result.goal.status == "complete"
    assert result.goal.token_budget == 10**9
    assert delays == [2]
    out = capsys.readouterr().out
    assert "Read it; more to do." in out and "All done." in out
    state = replay(JsonlEventStore(tmp_path / "home").read(result.thread_id))
    first, resumed = state.turns
    assert result.turn.turn_id == resumed.turn_id
    message = next(i for i in resumed.items if isinstance(i, UserMessage))
    assert message.goal_resume == 1 and message.text.startswith("[goal resume 1/5]")
    assert first.disable_user_input and resumed.disable_user_input  # no terminal here
    shown = await invoked(["replay", result.thread_id, "--home", str(tmp_path / "home")])
    assert "[goal resume 1/5]" in shown.output


async def test_run_goal_without_progress_ends_blocked_and_fails(
    tmp_path: Path, delays: list[float], capsys: pytest.CaptureFixture[str]
) -> None:
    _workspace(tmp_path)
    script = [text_reply(f"ok {n}") for n in range(6)]
    async with FakeProvider(script, format="chat_completions") as provider:
        options = _options(tmp_path, provider.base_url, goal="make a.py print A")
        result = await run_prompt(_target(tmp_path), options)
    assert result.failed(options)
    assert result.goal is not None and result.goal.status == "blocked"
    assert delays == [2, 4, 8, 16, 32]
    captured = capsys.readouterr()
    shown = captured.out + captured.err
    assert "goal blocked: 5 resumed turns" in shown
    assert "goal blocked: goal blocked" not in shown


async def test_run_goal_with_a_model_repeating_one_read_ends_blocked(
    tmp_path: Path, delays: list[float], capsys: pytest.CaptureFixture[str]
) -> None:
    """Each read succeeds, so the storm-stopped turn used to count as
    progress and the goal was resumed without end."""
    _workspace(tmp_path)
    script = [tool_reply("read_file", {"path": "a.py"}) for _ in range(40)]
    async with FakeProvider(script, format="chat_completions") as provider:
        options = _options(tmp_path, provider.base_url, goal="Read a.py forever")
        result = await run_prompt(_target(tmp_path), options)
        calls = len(provider.requests)
    assert result.failed(options)
    assert result.goal is not None and result.goal.status == "blocked"
    assert delays == []
    assert calls <= 12
    shown = capsys.readouterr()
    assert "goal blocked: kun stopped the turn (tool_storm_stopped)" in shown.out + shown.err


def test_goal_flags_are_checked_in_one_line(tmp_path: Path) -> None:
    home = ["--home", str(tmp_path)]
    for args, said in [
        (["--goal-budget", "5"], "--goal-budget needs --goal"),
        (["--goal", "  "], "--goal needs an objective"),
        (["--goal", "x", "--goal-budget", "0"], "--goal-budget"),
    ]:
        result = CliRunner().invoke(cli, ["run", "hi", *args, *home])
        assert result.exit_code == 1, result.output
        assert result.output.startswith("kun: error: ") and result.output.count("\n") == 1
        assert said in result.output


async def test_run_goal_without_a_prompt_takes_the_objective_as_the_first_prompt(
    tmp_path: Path,
) -> None:
    """``kun run --goal OBJECTIVE``, as the README writes it."""
    workspace = _workspace(tmp_path)
    script = [tool_reply("update_goal", {"status": "complete"}), text_reply("Done.")]
    async with FakeProvider(script, format="chat_completions") as provider:
        code, out, err = await _kun(
            "run", "--goal", "make a.py print A",
            "--config", str(_config(tmp_path, provider.base_url)),
            "--home", str(tmp_path / "home"), "--workspace", str(workspace),
        )  # fmt: skip
    assert code == 0, err
    assert "Done." in out and "goal complete" in out + err
    (log,) = (tmp_path / "home").rglob("events.jsonl")
    state = replay(JsonlEventStore(tmp_path / "home").read(log.parent.name))
    (turn,) = state.turns
    assert next(i for i in turn.items if isinstance(i, UserMessage)).text == "make a.py print A"


def test_run_without_a_prompt_or_a_goal_says_what_is_missing(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["run", "--home", str(tmp_path)])
    assert result.exit_code == 1 and result.output.count("\n") == 1
    assert "Missing argument 'PROMPT' (or give --goal OBJECTIVE)" in result.output


async def test_ctrl_c_while_waiting_for_a_resume_exits_and_leaves_the_goal_active(
    tmp_path: Path,
) -> None:
    """A real process: the signal comes while it waits for the first resume
    (2 s); it exits at once, resumes nothing, and the goal stays active."""
    workspace = _workspace(tmp_path)
    home = tmp_path / "home"
    async with FakeProvider([text_reply("Looked around.")], format="chat_completions") as p:
        command = [
            sys.executable, "-m", "kun", "run", "go", "--goal", "make a.py print A",
            "--config", str(_config(tmp_path, p.base_url)),
            "--home", str(home), "--workspace", str(workspace),
        ]  # fmt: skip
        environ = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        async with await anyio.open_process(command, env=environ) as process:
            assert process.stdout is not None and process.stderr is not None
            with anyio.fail_after(20):
                seen = b""
                while b"goal active: resuming in 2 s" not in seen:
                    seen += await process.stdout.receive()
                process.send_signal(signal.SIGINT)
                code = await process.wait()
                async for piece in process.stdout:
                    seen += piece
                err = b""
                async for piece in process.stderr:
                    err += piece
    assert code == 1, err
    assert b"goal still active" in seen and b"Traceback" not in err
    (thread_id,) = JsonlEventStore(home).list_threads()
    state = replay(JsonlEventStore(home).read(thread_id))
    assert [t.status for t in state.turns] == ["completed"]
    assert state.settings.goal is not None and state.settings.goal.status == "active"


def _target(tmp_path: Path) -> LocalTarget:
    """The home of the test, with the kun.toml :func:`_options` wrote."""
    return LocalTarget(tmp_path / "home", tmp_path / "kun.toml")


def _with_runtime(tmp_path: Path, runtime: str) -> None:
    """Add a ``[runtime]`` table to the test's kun.toml."""
    config = _target(tmp_path).config
    assert config is not None
    config.write_text(config.read_text() + f"\n[runtime]\n{runtime}")


@pytest.mark.parametrize(
    ("runtime", "waits", "resumed"),
    [
        (
            "goal_resume_base_seconds = 1\ngoal_resume_max_seconds = 3\n"
            "goal_resume_max_attempts = 4\n",
            [1, 2, 3, 3],
            4,
        ),
        ("goal_resume_base_seconds = 1\ngoal_resume_max_attempts = 2\n", [1, 2], 2),
    ],
)
async def test_the_configured_backoff_is_what_the_resumer_uses(
    tmp_path: Path, delays: list[float], runtime: str, waits: list[float], resumed: int
) -> None:
    _workspace(tmp_path)
    script = [text_reply(f"ok {n}") for n in range(resumed + 1)]
    async with FakeProvider(script, format="chat_completions") as provider:
        options = _options(tmp_path, provider.base_url, goal="make a.py print A")
        _with_runtime(tmp_path, runtime)
        result = await run_prompt(_target(tmp_path), options)
    assert delays == waits
    assert result.goal is not None and result.goal.status == "blocked"
    state = replay(JsonlEventStore(tmp_path / "home").read(result.thread_id))
    assert len(state.turns) == resumed + 1
    prompts = [next(i for i in t.items if isinstance(i, UserMessage)).text for t in state.turns]
    assert [p.split("]")[0] for p in prompts[1:]] == [
        f"[goal resume {n}/{resumed}" for n in range(1, resumed + 1)
    ]
    assert f"{resumed} resumed turns in a row" in state.warnings[-1].message


async def test_run_goal_json_prints_every_event_of_the_run_once_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    """Between the turns the goal's budget is changed (as another client
    could) and at the end the goal is blocked: those events are on stdout
    too, and stdout is the log, byte for byte."""
    services: list[TurnService] = []
    init = resume.GoalResumer.__init__

    def keep(self: resume.GoalResumer, service: TurnService, *args: Any, **kw: Any) -> None:
        services.append(service)
        init(self, service, *args, **kw)

    async def sleep(seconds: float) -> None:
        service = services[-1]  # the engine's: the adapter's model-less one resumes nothing
        (thread_id,) = service.recorder.store.list_threads()
        goal = service.state(thread_id).settings.goal
        assert goal is not None
        budget = 10**9 + int(seconds)
        await service.update_thread(
            thread_id, goal=msgspec.structs.replace(goal, token_budget=budget)
        )

    monkeypatch.setattr(resume.GoalResumer, "__init__", keep)
    monkeypatch.setattr(resume, "clock_sleep", sleep)
    _workspace(tmp_path)
    script = [text_reply(f"ok {n}") for n in range(3)]
    async with FakeProvider(script, format="chat_completions") as provider:
        options = _options(tmp_path, provider.base_url, goal="make a.py print A", json=True)
        _with_runtime(tmp_path, "goal_resume_max_attempts = 2\n")
        result = await run_prompt(_target(tmp_path), options)
    assert result.goal is not None and result.goal.status == "blocked"
    out = capsysbinary.readouterr().out
    (log,) = (tmp_path / "home").rglob("events.jsonl")
    lines = log.read_bytes().splitlines(keepends=True)
    assert out == b"".join(lines)
    kinds = [msgspec.json.decode(line)["kind"] for line in lines]
    assert kinds[0] == "thread_created" and kinds[-1] == "warning"
    first_end = kinds.index("turn_completed")
    assert kinds[first_end + 1] == "thread_updated"  # written while waiting to resume
    started = kinds.index("turn_started")
    assert out.splitlines(keepends=True)[started:] == lines[started:]
