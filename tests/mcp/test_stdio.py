"""MCP tools over stdio in real turns: a real server (tests/mcp/servers/demo.py)
started by ``open_service`` as ``kun run`` opens it, a scripted model."""

from __future__ import annotations

import base64
import logging
import os
import signal
import sys
from pathlib import Path

import anyio
import msgspec
import pytest

from kun.config.schema import McpServerTable
from kun.contracts import events as ev
from kun.mcp import connection
from kun.model.scripted import text_reply, tool_reply
from tests.mcp.servers.demo import PNG
from tests.mcp.support import ONCE, mcp_run, stdio_demo

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def test_a_turn_calls_an_mcp_tool_and_reads_its_result(tmp_path: Path) -> None:
    script = [
        tool_reply("demo__echo", {"text": "hello from mcp"}, call_id="c1"),
        tool_reply("demo__add", {"a": 2, "b": 40}, call_id="c2"),
        text_reply("done"),
    ]
    async with mcp_run(tmp_path, script, {"demo": stdio_demo()}) as run:
        turn = await run.turn()
        names = [t.name for t in run.model.requests[0].tools]
    assert turn.status == "completed"
    assert {"demo__echo", "demo__add", "read_file"} <= set(names)
    results = run.results(turn)
    assert (results["c1"].output, results["c1"].is_error) == ("hello from mcp", False)
    assert results["c2"].output == "42"
    assert "hello from mcp" in str(run.model.requests[1].history)


async def test_arguments_are_validated_against_the_servers_schema(tmp_path: Path) -> None:
    script = [
        tool_reply("demo__add", {"a": "two", "b": 1}, call_id="c1"),
        tool_reply("demo__echo", {"txt": "x"}, call_id="c2"),
        text_reply("done"),
    ]
    async with mcp_run(tmp_path, script, {"demo": stdio_demo()}) as run:
        turn = await run.turn()
    results = run.results(turn)
    assert results["c1"].code == "invalid_arguments" and "a:" in results["c1"].output
    assert results["c2"].code == "invalid_arguments" and "text: missing" in results["c2"].output


async def test_an_mcp_tool_asks_approval_as_exec_under_on_request(tmp_path: Path) -> None:
    script = [tool_reply("demo__echo", {"text": "approved"}, call_id="c1"), text_reply("ok")]
    async with mcp_run(tmp_path, script, {"demo": stdio_demo()}, policy="on-request") as run:
        turn_id = await run.service.start_turn(run.thread_id, "go")
        asked = None
        with anyio.fail_after(20):
            async for event in run.service.recorder.subscribe(run.thread_id):
                if isinstance(event, ev.ApprovalRequested):
                    asked = event
                    await run.service.answer_approval(event.approval_id, "approved")
                    break
            turn = await run.service.wait_turn(run.thread_id, turn_id)
    assert asked is not None
    assert run.results(turn)["c1"].output == "approved"


async def test_a_read_approval_runs_without_asking(tmp_path: Path) -> None:
    script = [tool_reply("demo__echo", {"text": "read"}, call_id="c1"), text_reply("ok")]
    server = stdio_demo(approval="read")
    async with mcp_run(tmp_path, script, {"demo": server}, policy="on-request") as run:
        turn = await run.turn()
    assert turn.status == "completed" and run.results(turn)["c1"].output == "read"
    assert "approval_requested" not in run.log()


async def test_env_names_pass_values_and_the_log_never_holds_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEMO_ACCOUNT_ID", "acct-7f3a9c2e11b4")
    monkeypatch.setenv("OTHER_SECRET", "not-for-the-server")
    script = [
        tool_reply("demo__getenv", {"name": "DEMO_ACCOUNT_ID"}, call_id="c1"),
        tool_reply("demo__getenv", {"name": "OTHER_SECRET"}, call_id="c2"),
        text_reply("done"),
    ]
    async with mcp_run(tmp_path, script, {"demo": stdio_demo(env=("DEMO_ACCOUNT_ID",))}) as run:
        turn = await run.turn()
    results = run.results(turn)
    assert results["c1"].output == "[redacted]"
    assert results["c2"].output == "<unset>"
    assert "acct-7f3a9c2e11b4" not in run.log()


async def test_a_hanging_call_times_out_and_the_turn_goes_on(tmp_path: Path) -> None:
    script = [
        tool_reply("demo__slow", {"seconds": 1.5}, call_id="c1"),
        tool_reply("demo__echo", {"text": "still here"}, call_id="c2"),
        text_reply("done"),
    ]
    async with mcp_run(tmp_path, script, {"demo": stdio_demo(timeout_seconds=0.5)}) as run:
        turn = await run.turn()
    results = run.results(turn)
    assert turn.status == "completed"
    assert results["c1"].is_error and results["c1"].code == "mcp_timeout"
    assert results["c2"].output == "still here"


async def test_garbage_and_a_crash_are_tool_errors_and_a_dropped_server_is_reconnected(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    script = [
        tool_reply("demo__bad", {}, call_id="c1"),
        tool_reply("demo__fail", {}, call_id="c2"),
        tool_reply("demo__crash", {}, call_id="c3"),
        tool_reply("demo__pid", {}, call_id="c4"),
        text_reply("first"),
        tool_reply("demo__pid", {}, call_id="c5"),
        text_reply("second"),
    ]
    caplog.set_level(logging.WARNING, logger="kun.mcp")
    async with mcp_run(tmp_path, script, {"demo": stdio_demo()}) as run:
        turn = await run.turn()
        results = run.results(turn)
        os.kill(int(results["c4"].output), signal.SIGKILL)
        with anyio.fail_after(10):
            while caplog.text.count("'demo' stopped") < 2:  # noqa: ASYNC110 (a log line)
                await anyio.sleep(0.05)
        after_kill = run.results(await run.turn())["c5"]
    assert turn.status == "completed"
    assert [results[c].code for c in ("c1", "c2", "c3")] == [
        "mcp_bad_response",
        "mcp_tool_error",
        "mcp_unknown_after_disconnect",
    ]
    assert "may or may not have taken effect" in results["c3"].output
    assert not results["c4"].is_error and results["c4"].output.isdigit()
    assert not after_kill.is_error, after_kill.output
    assert after_kill.output.isdigit() and after_kill.output != results["c4"].output


async def test_a_server_that_cannot_restart_is_given_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(connection, "MAX_RECONNECTS", 1)
    monkeypatch.setattr(connection, "BACKOFF_SECONDS", 0.05)
    once = McpServerTable(command=sys.executable, args=(str(ONCE), str(tmp_path / "started")))
    script = [
        tool_reply("demo__crash", {}, call_id="c1"),
        tool_reply("demo__echo", {"text": "2"}, call_id="c2"),
        tool_reply("demo__echo", {"text": "3"}, call_id="c3"),
        text_reply("done"),
    ]
    async with mcp_run(tmp_path, script, {"demo": once}) as run:
        turn = await run.turn()
    results = run.results(turn)
    assert turn.status == "completed"
    assert [results[c].code for c in ("c1", "c2", "c3")] == [
        "mcp_unknown_after_disconnect",
        "mcp_server_crashed",
        "mcp_server_crashed",
    ]
    assert "reconnecting failed" in results["c2"].output
    assert "until kun restarts" in results["c3"].output


async def test_a_new_tool_list_comes_next_step_and_an_image_is_an_attachment(
    tmp_path: Path,
) -> None:
    script = [
        tool_reply("demo__echo", {"text": "a"}, call_id="c1"),
        tool_reply("demo__grow", {}, call_id="c2"),
        tool_reply("demo__extra", {}, call_id="c3"),
        tool_reply("demo__picture", {}, call_id="c4"),
        text_reply("done"),
    ]
    async with mcp_run(tmp_path, script, {"demo": stdio_demo()}) as run:
        turn = await run.turn()
    requests = run.model.requests
    names = [{t.name for t in r.tools} for r in requests]
    assert msgspec.json.encode(requests[1].tools) == msgspec.json.encode(requests[0].tools)
    assert "demo__extra" not in names[1]
    assert names[2] - names[1] == {"demo__extra"} and names[3] == names[2]
    results = run.results(turn)
    assert results["c3"].output == "extra ran"
    picture = results["c4"]
    assert picture.output == f"a chart\n[image image/png, {len(PNG)} bytes, attached]"
    [image] = picture.attachments
    assert image.mime_type == "image/png" and image.size_bytes == len(PNG)
    saved = anyio.Path(image.path or "")
    assert await saved.read_bytes() == PNG
    assert Path(saved.parent) == tmp_path / "home" / "uploads" / run.thread_id
    assert image.ref is not None and image.ref.size == len(PNG)
    sent = [a for i in requests[4].history for a in getattr(i, "attachments", ())]
    assert [(a.ref, getattr(a, "data", None)) for a in sent] == [(image.ref, PNG)]
    assert base64.b64encode(PNG[:300]).decode()[:100] not in run.log()


async def test_a_server_that_does_not_start_is_a_warning_and_the_thread_runs(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    servers = {
        "gone": stdio_demo().__class__(command=str(tmp_path / "no-such-server")),
        "off": stdio_demo(enabled=False),
    }
    script = [tool_reply("gone__echo", {"text": "x"}, call_id="c1"), text_reply("fine")]
    with caplog.at_level(logging.WARNING, logger="kun.mcp"):
        async with mcp_run(tmp_path, script, servers) as run:
            turn = await run.turn()
            names = {t.name for t in run.model.requests[0].tools}
    assert turn.status == "completed"
    assert run.results(turn)["c1"].code == "unknown_tool"
    assert not any(n.startswith(("gone__", "off__")) for n in names)
    assert "'gone' did not start" in caplog.text and "'off'" not in caplog.text


async def test_a_server_that_dies_at_start_is_explained_by_its_last_stderr_lines(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not just "Connection closed": what the server said, its secrets
    redacted, control characters dropped."""
    monkeypatch.setenv("DEMO_TOKEN", "tok-3f9a1c77e2")
    noisy = "\n".join(f"starting step {n}" for n in range(50))
    code = (
        "import os, sys\n"
        f"sys.stderr.write({noisy!r} + '\\n')\n"
        "sys.stderr.write('\\x1b[31mtoken ' + os.environ['DEMO_TOKEN'] + ' refused\\n')\n"
        "sys.stderr.write('ModuleNotFoundError: No module named foo\\n')\n"
        "sys.exit(1)\n"
    )
    servers = {
        "bad": McpServerTable(command=sys.executable, args=("-c", code), env=("DEMO_TOKEN",))
    }
    with caplog.at_level(logging.WARNING, logger="kun.mcp"):
        async with mcp_run(tmp_path, [text_reply("fine")], servers) as run:
            turn = await run.turn()
    assert turn.status == "completed"
    (warning,) = [r.getMessage() for r in caplog.records if "'bad' did not start" in r.getMessage()]
    assert warning.endswith(
        "its stderr ended: starting step 47 | starting step 48 | starting step 49 | "
        "token [redacted] refused | ModuleNotFoundError: No module named foo"
    ), warning
    assert "tok-3f9a1c77e2" not in caplog.text and "\x1b" not in warning
