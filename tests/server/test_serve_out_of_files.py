"""``kun serve`` out of file descriptors: a real process whose open-files
limit is low, more connections than it may hold. It says so once, not a
traceback per failed accept, and serves again once they are gone."""

from __future__ import annotations

import contextlib
import resource
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

pytestmark = pytest.mark.slow

FILES = 64
WAIT_SECONDS = 30.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _few_files() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (FILES, FILES))


@contextlib.contextmanager
def _serve(tmp_path: Path, port: int) -> Iterator[Path]:
    config = tmp_path / "kun.toml"
    config.write_text(
        'default_provider = "fake"\n\n[providers.fake]\nbase_url = "http://127.0.0.1:9"\n'
        'endpoint_format = "chat_completions"\ndefault_model = "fake-model"\n'
    )
    out = tmp_path / "serve.out"
    command = [
        sys.executable, "-m", "kun", "serve", "--port", str(port), "--config", str(config),
        "--home", str(tmp_path / "home"), "--header-timeout", "2",
    ]  # fmt: skip
    with out.open("wb") as sink:
        process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=sink, stderr=subprocess.STDOUT,
            cwd=tmp_path, preexec_fn=_few_files,
        )  # fmt: skip
    try:
        _until(lambda: _answers(port), "kun serve never listened", out)
        yield out
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=WAIT_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _answers(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/v1/threads", timeout=5).status_code == 200
    except httpx.TransportError:
        return False


def _until(condition: object, what: str, out: Path) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, (what, out.read_text()[-2000:])
        time.sleep(0.05)


def test_out_of_files_it_says_so_once_and_recovers(tmp_path: Path) -> None:
    port = _free_port()
    with _serve(tmp_path, port) as out:
        crowd = [socket.create_connection(("127.0.0.1", port)) for _ in range(3 * FILES)]
        try:
            _until(lambda: "cannot accept" in out.read_text(), "no accept error said", out)
        finally:
            for sock in crowd:
                sock.close()
        _until(lambda: _answers(port), "kun serve did not recover", out)
    said = out.read_text()
    assert said.count("cannot accept connections: [Errno 24] Too many open files") == 1, said
    assert "Traceback" not in said and "out of system resource" not in said, said[-3000:]
    assert f"this process may open {FILES} files" in said
