"""A line nested deeper than anything a session holds (``[`` a hundred
thousand times, or a tool input a few hundred levels deep) is refused naming
its line: one ``kun: error:`` line in the CLI, 400 over HTTP, never a
``RecursionError`` (a 500); a bundle whose log holds one is refused too."""

from __future__ import annotations

import hashlib
import io
import tarfile
from pathlib import Path
from typing import Any

import msgspec
import pytest
from click.testing import CliRunner

from kun.entry import cli
from kun.portable.bundle import export_thread
from kun.portable.depth import MAX_DEPTH
from kun.portable.errors import BundleRefused, SourceRefused
from kun.portable.sessions import import_session
from kun.portable.unbundle import import_bundle
from kun.store.paths import blobs_dir, log_path, threads_root
from kun.store.replay import replay_log
from tests.portable.conftest import stored_thread
from tests.server.support import api

FIRST = msgspec.json.encode({"type": "user", "message": {"content": "hi"}, "sessionId": "s"})
CODEX_FIRST = msgspec.json.encode(
    {"type": "session_meta", "payload": {"id": "c", "cwd": "/w"}, "timestamp": "2025-01-01T00:00Z"}
)


def brackets(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


def tool_input(depth: int) -> bytes:
    block = b'{"type":"tool_use","id":"t","name":"x","input":{"a":' + brackets(depth) + b"}}"
    return b'{"type":"assistant","message":{"content":[' + block + b"]}}"


DEEP_LINES = {
    "brackets": brackets(100_000),
    "tool-input": tool_input(MAX_DEPTH),
    "below-the-decoder's-limit": tool_input(900),
}


def _session(path: Path, first: bytes, deep: bytes) -> Path:
    path.write_bytes(first + b"\n" + deep + b"\n")
    return path


def _nothing(home: Path) -> None:
    root = threads_root(home)
    assert not root.exists() or not any(root.iterdir())


@pytest.mark.parametrize("deep", DEEP_LINES.values(), ids=DEEP_LINES.keys())
@pytest.mark.parametrize(
    ("source", "first"), [("claude-code", FIRST), ("codex", CODEX_FIRST)], ids=["claude", "codex"]
)
def test_a_deep_line_is_refused_by_name(
    tmp_path: Path, source: str, first: bytes, deep: bytes
) -> None:
    path = _session(tmp_path / "s.jsonl", first, deep)
    with pytest.raises(SourceRefused, match=f"line 2 is nested more than {MAX_DEPTH} levels deep"):
        import_session(tmp_path / "home", path, source, replace_changed=False)
    _nothing(tmp_path / "home")


def test_deep_json_inside_a_string_is_kept_as_text(tmp_path: Path) -> None:
    """A Codex call whose arguments, and a shell output whose text, hold
    JSON nested 100,000 deep: both kept as the strings they are."""
    deep = "[" * 100_000 + "]" * 100_000
    ts = "2025-10-01T12:00:0{}Z"
    lines: list[dict[str, Any]] = [
        {"timestamp": ts.format(0), "type": "session_meta", "payload": {"id": "c", "cwd": "/w"}},
        {
            "timestamp": ts.format(1),
            "type": "response_item",
            "payload": {"type": "message", "role": "user", "content": [{"text": "go"}]},
        },
        {
            "timestamp": ts.format(2),
            "type": "response_item",
            "payload": {
                "type": "function_call",
                "call_id": "c",
                "name": "shell",
                "arguments": deep,
            },
        },
        {
            "timestamp": ts.format(3),
            "type": "response_item",
            "payload": {
                "type": "function_call_output",
                "call_id": "c",
                "output": '{"output":' + deep + "}",
            },
        },
    ]
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"".join(msgspec.json.encode(line) + b"\n" for line in lines))
    home = tmp_path / "home"
    result = import_session(home, path, "codex", replace_changed=False)
    state = replay_log(log_path(home, result.thread_id))
    call, output = [i for t in state.turns for i in t.items][1:3]
    assert msgspec.json.decode(bytes(call.arguments)) == {"input": deep}
    assert output.output_ref is not None  # kept whole in a side file, as text
    blob = blobs_dir(home, result.thread_id) / output.output_ref.sha256
    assert blob.read_text() == '{"output":' + deep + "}"


def test_a_record_at_the_limit_imports(tmp_path: Path) -> None:
    path = _session(tmp_path / "s.jsonl", FIRST, tool_input(MAX_DEPTH - 8))
    assert import_session(tmp_path / "home", path, "claude-code", replace_changed=False)


def test_the_cli_says_so_in_one_line(tmp_path: Path) -> None:
    path = _session(tmp_path / "s.jsonl", FIRST, brackets(100_000))
    home = str(tmp_path / "h")
    result = CliRunner().invoke(cli, ["import", "--from", "claude-code", str(path), "--home", home])
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith("kun: error:") and result.stderr.count("\n") == 1
    assert "line 2 is nested" in result.stderr


@pytest.mark.anyio
async def test_the_api_answers_400(tmp_path: Path) -> None:
    async with api(tmp_path) as served:
        for source, first in (("claude-code", FIRST), ("codex", CODEX_FIRST)):
            answer = await served.client.post(
                f"/v1/threads/import?from={source}", content=first + b"\n" + brackets(100_000)
            )
            assert answer.status_code == 400, answer.text
            error = answer.json()["error"]
            assert error["code"] == "source_refused"
            assert "line 2 is nested" in error["message"]


def _with_log(bundle: Path, log: bytes, out: Path) -> Path:
    """``bundle`` with its log replaced by ``log`` and the manifest made to
    agree (sizes, hash, counts): only a replay can refuse it."""
    with tarfile.open(bundle) as tar:
        members = {m.name: tar.extractfile(m).read() for m in tar.getmembers()}  # type: ignore[union-attr]
    manifest: dict[str, Any] = msgspec.json.decode(members["manifest.json"])
    for entry in manifest["files"]:
        if entry["path"] == "events.jsonl":
            entry.update(size=len(log), sha256=hashlib.sha256(log).hexdigest())
    manifest["events"] = log.count(b"\n")
    manifest["last_seq"] = log.count(b"\n")
    members["manifest.json"] = msgspec.json.encode(manifest)
    members["events.jsonl"] = log
    with tarfile.open(out, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out


def test_a_bundle_whose_log_holds_a_deep_line_is_refused(tmp_path: Path) -> None:
    stored_thread(tmp_path / "a")
    bundle = tmp_path / "t.kun.tar.gz"
    export_thread(tmp_path / "a", "thr_source", bundle)
    first = (tmp_path / "a" / "threads" / "thr_source" / "events.jsonl").read_bytes()
    first = first.split(b"\n")[0]
    deep = b'{"kind":"warning","seq":2,"at":1,"code":"c","message":"m","x":' + brackets(100_000)
    altered = _with_log(bundle, first + b"\n" + deep + b"}\n", tmp_path / "deep.kun.tar.gz")
    with pytest.raises(BundleRefused, match=r"line 2.*nested too deeply"):
        import_bundle(tmp_path / "b", altered)
    _nothing(tmp_path / "b")


def test_a_bundle_whose_manifest_is_nested_too_deeply_is_refused(tmp_path: Path) -> None:
    deep = b'{"x":' + brackets(100_000) + b"}"
    out = tmp_path / "deep.kun.tar.gz"
    with tarfile.open(out, "w:gz") as tar:
        info = tarfile.TarInfo("manifest.json")
        info.size = len(deep)
        tar.addfile(info, io.BytesIO(deep))
    with pytest.raises(BundleRefused, match=r"manifest.json is not a kun manifest \(nested"):
        import_bundle(tmp_path / "b", out)
