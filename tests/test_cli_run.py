"""``kun run`` as a user runs it: a real process, a real provider on 127.0.0.1."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import anyio
import msgspec
import pytest

from kun.contracts.model import CompletedChunk, TextDeltaChunk, ToolCallCompleteChunk
from kun.domain.reduce import replay
from kun.model.scripted import tool_reply
from kun.model.toolcalls import SYNTHETIC_ID_PREFIX
from kun.store.jsonl import JsonlEventStore
from kun.testing.fake_provider import FakeProvider, FakeResponse

pytestmark = pytest.mark.anyio

ANSWER = FakeResponse(
    chunks=(TextDeltaChunk(text="a.py prints a."), CompletedChunk(stop_reason="stop"))
)


def _config(tmp_path: Path, base_url: str) -> Path:
    config = tmp_path / "kun.toml"
    config.write_text(
        'default_provider = "fake"\n\n[providers.fake]\n'
        f'base_url = "{base_url}"\nendpoint_format = "chat_completions"\n'
        'default_model = "fake-model"\n'
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


def _workspace(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.py").write_text("print('a')\n")
    return workspace


async def test_kun_run_streams_a_tool_using_turn(tmp_path: Path) -> None:
    workspace = _workspace(tmp_path)
    script = [FakeResponse(chunks=tuple(tool_reply("read_file", {"path": "a.py"}))), ANSWER]
    async with FakeProvider(script, format="chat_completions") as provider:
        code, out, err = await _kun(
            "run", "what does a.py print?",
            "--config", str(_config(tmp_path, provider.base_url)),
            "--home", str(tmp_path / "home"),
            "--workspace", str(workspace),
        )  # fmt: skip
    assert code == 0, err
    assert '-> read_file({"path":"a.py"})' in out
    assert "a.py prints a." in out and "turn completed" in out
    thread_id = err.split()[1]
    state = replay(JsonlEventStore(tmp_path / "home").read(thread_id))
    assert state.turns[0].status == "completed"
    assert state.settings.workspace == str(workspace.resolve())


async def test_without_a_terminal_approvals_are_denied_not_awaited(tmp_path: Path) -> None:
    workspace = _workspace(tmp_path)
    write = tool_reply("write_file", {"path": "b.py", "content": "x"})
    script = [FakeResponse(chunks=tuple(write)), ANSWER]
    async with FakeProvider(script, format="chat_completions") as provider:
        code, out, err = await _kun(
            "run", "write b.py", "--approval", "auto",
            "--config", str(_config(tmp_path, provider.base_url)),
            "--home", str(tmp_path / "home"), "--workspace", str(workspace),
        )  # fmt: skip
    assert code == 0, err
    assert "approval needed" in out and "denied: no terminal to ask on" in out
    assert not (workspace / "b.py").exists()


async def test_no_provider_configured_is_one_clear_line(tmp_path: Path) -> None:
    code, out, err = await _kun(
        "run", "hi", "--home", str(tmp_path), env={"KUN_CONFIG": "", "HOME": str(tmp_path)}
    )
    assert code == 1 and out == ""
    assert err.count("\n") == 1 and err.startswith("kun: error: ")
    assert "OPENAI_API_KEY" in err


async def test_a_missing_config_file_is_one_clear_line(tmp_path: Path) -> None:
    code, _, err = await _kun("run", "hi", "--config", str(tmp_path / "nope.toml"))
    assert code == 1 and err.count("\n") == 1 and "nope.toml" in err


async def test_ctrl_c_interrupts_the_turn_cleanly(tmp_path: Path) -> None:
    workspace = _workspace(tmp_path)
    words = tuple(TextDeltaChunk(text=f"word{i} ") for i in range(2000))
    slow = FakeResponse(chunks=(*words, CompletedChunk(stop_reason="stop")), per_event=True,
                        piece_delay=0.01)  # fmt: skip
    home = tmp_path / "home"
    environ = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    async with FakeProvider([slow], format="chat_completions") as provider:
        command = [
            sys.executable, "-m", "kun", "run", "talk",
            "--config", str(_config(tmp_path, provider.base_url)),
            "--home", str(home), "--workspace", str(workspace),
        ]  # fmt: skip
        async with await anyio.open_process(command, env=environ) as process:
            assert process.stdout is not None and process.stderr is not None
            with anyio.fail_after(20):
                seen = b""
                while b"word3" not in seen:
                    seen += await process.stdout.receive()
                process.send_signal(signal.SIGINT)
                code = await process.wait()
                async for piece in process.stdout:
                    seen += piece
                err = b""
                async for piece in process.stderr:
                    err += piece
    assert code == 1, err
    assert b"interrupting the turn" in seen and b"aborted" in err
    (thread_id,) = JsonlEventStore(home).list_threads()
    events = list(JsonlEventStore(home).read(thread_id))
    assert type(events[-1]).__name__ == "TurnAborted"
    turn = replay(events).turns[0]
    assert turn.status == "aborted"
    assert all(item.status not in ("in_progress", "pending") for item in turn.items)


async def test_kun_run_against_a_closed_local_port_says_so_at_once(tmp_path: Path) -> None:
    """Nothing listens on the port: one attempt, one line naming the address,
    no retries (a refused loopback connection is not worth waiting on)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    config = _config(tmp_path, f"http://127.0.0.1:{port}/v1")
    code, out, err = await _kun(
        "run", "hi", "--config", str(config), "--home", str(tmp_path / "home"),
        "--workspace", str(_workspace(tmp_path)),
    )  # fmt: skip
    assert code == 1
    both = out + err
    listening = f"nothing is listening at http://127.0.0.1:{port} \u2014 is the server running?"
    assert both.count(listening) == 1, both
    assert "retrying in" not in both


async def test_a_model_repeating_one_call_is_stopped_with_one_readable_line(
    tmp_path: Path,
) -> None:
    workspace = _workspace(tmp_path)
    script = [
        FakeResponse(chunks=tuple(tool_reply("read_file", {"path": "a.py"}, call_id=f"c{n}")))
        for n in range(40)
    ]
    async with FakeProvider(script, format="chat_completions") as provider:
        code, out, err = await _kun(
            "run", "what does a.py print?",
            "--config", str(_config(tmp_path, provider.base_url)),
            "--home", str(tmp_path / "home"), "--workspace", str(workspace),
        )  # fmt: skip
        calls = len(provider.requests)
    assert code == 1, err
    assert calls <= 24
    (line,) = [row for row in out.splitlines() if "tool_storm_stopped" in row]
    assert line.startswith("error [tool_storm_stopped]: the model kept repeating tool calls")
    assert "read_file" in line and "turn failed" in out


async def test_a_thread_continued_from_another_folder_reads_its_workspaces_kun_toml(
    tmp_path: Path,
) -> None:
    workspace = _workspace(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    home = str(tmp_path / "home")
    environ = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    environ.pop("KUN_CONFIG", None)

    async def kun(*args: str) -> tuple[int, str, str]:
        done = await anyio.run_process(
            [sys.executable, "-m", "kun", *args, "--home", home],
            check=False, env=environ, cwd=elsewhere, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        return done.returncode, done.stdout.decode(), done.stderr.decode()

    async with FakeProvider([ANSWER, ANSWER], format="chat_completions") as provider:
        config = _config(tmp_path, provider.base_url).rename(workspace / "kun.toml")
        code, _, err = await kun("trust", str(config))
        assert code == 0, err  # its base_url counts only once the user trusts it
        code, _, err = await kun("run", "first", "--workspace", str(workspace))
        assert code == 0, err  # the workspace named here has the kun.toml
        assert f"kun: note: configuration from {config} (the thread's workspace)" in err
        thread_id = err.splitlines()[-1].split()[1]
        code, out, err = await kun("run", "again", "--thread", thread_id)
    assert code == 0, err
    assert f"kun: note: configuration from {config} (the thread's workspace)" in err
    assert "a.py prints a." in out


async def test_kun_run_a_gemini_thread_with_a_tool_call(tmp_path: Path) -> None:
    """The Gemini format end to end: the key goes in ``x-goog-api-key``
    (never in the URL), the call comes back without an id and is paired
    with its result by name and order, and its thought signature goes back
    on its part."""
    workspace = _workspace(tmp_path)
    call = tool_reply("read_file", {"path": "a.py"}, call_id=f"{SYNTHETIC_ID_PREFIX}0")
    signed = [
        msgspec.structs.replace(chunk, thought_signature="c2lnLTE=")
        if isinstance(chunk, ToolCallCompleteChunk)
        else chunk
        for chunk in call
    ]
    script = [FakeResponse(chunks=tuple(signed)), ANSWER]
    config = tmp_path / "kun.toml"
    async with FakeProvider(script, format="gemini") as provider:
        config.write_text(
            'default_provider = "gem"\n\n[providers.gem]\n'
            f'base_url = "{provider.base_url}"\nendpoint_format = "gemini"\n'
            'api_key_env = "KUN_TEST_GEMINI_KEY"\ndefault_model = "gemini-2.5-flash"\n'
        )
        code, out, err = await _kun(
            "run", "what does a.py print?",
            "--config", str(config),
            "--home", str(tmp_path / "home"),
            "--workspace", str(workspace),
            env={"KUN_TEST_GEMINI_KEY": "g-secret"},
        )  # fmt: skip
        requests = provider.requests
    assert code == 0, err
    assert '-> read_file({"path":"a.py"})' in out
    assert "a.py prints a." in out and "turn completed" in out
    first, second = requests
    assert first.path == "/v1/models/gemini-2.5-flash:streamGenerateContent"
    assert first.query == "alt=sse" and "g-secret" not in first.query
    assert first.headers["x-goog-api-key"] == "g-secret"
    assert "authorization" not in first.headers
    model, answered = second.json["contents"][-2:]
    assert model["role"] == "model"
    assert model["parts"][-1]["functionCall"] == {"name": "read_file", "args": {"path": "a.py"}}
    assert model["parts"][-1]["thoughtSignature"] == "c2lnLTE="
    (response,) = [p for p in answered["parts"] if "functionResponse" in p]
    assert response["functionResponse"]["name"] == "read_file"
    assert "print('a')" in response["functionResponse"]["response"]["output"]
