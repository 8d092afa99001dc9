"""A JSON-lines file that is no session of the agent named is refused in
one line, by the CLI and by the HTTP API, instead of becoming a thread made
of ``import_unknown_record`` warnings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest
from click.testing import CliRunner

from kun.entry import cli
from kun.portable.errors import SourceRefused
from kun.portable.sessions import import_session
from kun.store.paths import threads_root
from tests.portable.test_sessions import claude_lines, codex_lines
from tests.server.support import api

NOT_CLAUDE = "not a Claude Code session"
NOT_CODEX = "not a Codex rollout"

_STRANGERS: list[tuple[str, list[Any], str]] = [
    ("claude-code", [{"type": "x"}], NOT_CLAUDE),
    ("claude-code", [{"type": "summary", "summary": "t", "sessionId": "s"}], NOT_CLAUDE),
    ("claude-code", [{"type": "user", "message": "hi", "sessionId": "s"}], NOT_CLAUDE),
    ("claude-code", codex_lines(), NOT_CLAUDE),
    ("codex", [{"type": "x"}], NOT_CODEX),
    ("codex", [{"id": "row-1", "name": "a"}, {"id": "row-2", "type": "b"}], NOT_CODEX),
    ("codex", claude_lines(), NOT_CODEX),
]


def _write(path: Path, lines: list[Any]) -> Path:
    path.write_bytes(b"".join(msgspec.json.encode(line) + b"\n" for line in lines))
    return path


@pytest.mark.parametrize(("source", "lines", "reason"), _STRANGERS)
def test_a_stranger_file_is_refused_and_leaves_nothing(
    tmp_path: Path, source: str, lines: list[Any], reason: str
) -> None:
    path = _write(tmp_path / "x.jsonl", lines)
    with pytest.raises(SourceRefused, match=reason):
        import_session(tmp_path / "home", path, source, replace_changed=False)
    root = threads_root(tmp_path / "home")
    assert not root.exists() or not any(p.name.startswith("thr_") for p in root.iterdir())


def test_one_message_record_is_enough(tmp_path: Path) -> None:
    record = {"type": "user", "message": {"content": "hi"}}
    path = _write(tmp_path / "x.jsonl", [{"type": "x"}, record])
    assert import_session(tmp_path / "home", path, "claude-code", replace_changed=False)


def test_the_cli_says_so_in_one_line(tmp_path: Path) -> None:
    path = _write(tmp_path / "x.jsonl", [{"type": "x"}])
    home = str(tmp_path / "h")
    result = CliRunner().invoke(cli, ["import", "--from", "claude-code", str(path), "--home", home])
    assert result.exit_code == 1
    assert result.stderr.startswith("kun: error:") and result.stderr.count("\n") == 1
    assert NOT_CLAUDE in result.stderr


@pytest.mark.anyio
async def test_the_api_answers_400(tmp_path: Path) -> None:
    async with api(tmp_path) as served:
        for source, reason in (("claude-code", NOT_CLAUDE), ("codex", NOT_CODEX)):
            answer = await served.client.post(
                f"/v1/threads/import?from={source}", content=b'{"id":"a","type":"x"}\n'
            )
            assert answer.status_code == 400, answer.text
            assert reason in answer.json()["error"]["message"]
