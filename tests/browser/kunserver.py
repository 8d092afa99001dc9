"""``kun serve`` as a real process for the browser tests, restartable on the
same port and home (the durable log is what makes a restart harmless), and a
small synchronous client of its API for arranging and checking what the page
shows."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import msgspec

START_SECONDS = 20.0
WAIT_SECONDS = 10.0
STOP_SECONDS = 15.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class KunServer:
    """One ``kun serve`` on 127.0.0.1 over ``root/home``, its model the fake
    provider at ``base_url``, requiring ``token`` if given; ``start``,
    ``stop`` and ``restart`` keep the port, so a page open on it sees the
    same origin come back."""

    def __init__(self, root: Path, base_url: str, *, token: str | None = None) -> None:
        self.root = root
        self.token = token
        self.home = root / "home"
        self.port = free_port()
        self.origin = f"http://127.0.0.1:{self.port}"
        self.workspace = root / "ws"
        self.workspace.mkdir(exist_ok=True)
        self.config = root / "kun.toml"
        self.config.write_text(
            'default_provider = "fake"\n\n[providers.fake]\n'
            f'base_url = "{base_url}"\nendpoint_format = "chat_completions"\n'
            'default_model = "fake-model"\n'
        )
        self.output = root / "serve.out"
        self.process: subprocess.Popen[bytes] | None = None
        self.created: list[str] = []
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.client = httpx.Client(base_url=self.origin, headers=headers, timeout=WAIT_SECONDS)

    def start(self) -> None:
        command = [
            sys.executable, "-m", "kun", "serve", "--port", str(self.port),
            "--config", str(self.config), "--home", str(self.home),
        ]  # fmt: skip
        environ = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        if self.token:
            command += ["--token-env", "KUN_BROWSER_TOKEN"]
            environ["KUN_BROWSER_TOKEN"] = self.token
        with self.output.open("ab") as out:
            self.process = subprocess.Popen(
                command, env=environ, cwd=self.root, stdin=subprocess.DEVNULL,
                stdout=out, stderr=subprocess.STDOUT,
            )  # fmt: skip
        deadline = time.monotonic() + START_SECONDS
        while True:
            try:
                self.client.get("/v1/threads")
                return
            except httpx.TransportError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"kun serve did not start:\n{self.tail()}") from None
                time.sleep(0.05)

    def stop(self, sig: signal.Signals = signal.SIGTERM) -> int:
        process, self.process = self.process, None
        if process is None:
            return 0
        if process.poll() is None:
            process.send_signal(sig)
        try:
            return process.wait(STOP_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            return process.wait()

    def ensure_running(self) -> None:
        if self.process is None or self.process.poll() is not None:
            self.stop()
            self.start()

    def interrupt_created(self) -> None:
        """Interrupt whatever turn is still running on the threads made
        since ``created`` was cleared."""
        for thread_id in self.created:
            for turn in self.state(thread_id)["turns"]:
                if turn["status"] in ("queued", "running"):
                    url = f"/v1/threads/{thread_id}/turns/{turn['turn_id']}/interrupt"
                    self.client.post(url, json={})

    def restart(self, sig: signal.Signals = signal.SIGTERM) -> None:
        self.stop(sig)
        self.start()

    def close(self) -> None:
        self.stop(signal.SIGKILL)
        self.client.close()

    def tail(self, lines: int = 30) -> str:
        text = self.output.read_text(errors="replace") if self.output.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def url(self, path: str) -> str:
        return self.origin + path

    def new_thread(self, **body: Any) -> str:
        response = self.client.post("/v1/threads", json={"workspace": str(self.workspace), **body})
        assert response.status_code == 201, response.text
        thread_id: str = response.json()["thread_id"]
        self.created.append(thread_id)
        return thread_id

    def start_turn(self, thread_id: str, text: str) -> str:
        response = self.client.post(f"/v1/threads/{thread_id}/turns", json={"text": text})
        assert response.status_code == 202, response.text
        turn_id: str = response.json()["turn_id"]
        return turn_id

    def state(self, thread_id: str) -> dict[str, Any]:
        response = self.client.get(f"/v1/threads/{thread_id}")
        assert response.status_code == 200, response.text
        state: dict[str, Any] = response.json()
        return state

    def wait_state(self, thread_id: str, until: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        """Poll the thread until ``until(state)``."""
        deadline = time.monotonic() + WAIT_SECONDS
        while True:
            state = self.state(thread_id)
            if until(state):
                return state
            assert time.monotonic() < deadline, f"thread never got there: {state}"
            time.sleep(0.02)

    def settled(self, thread_id: str) -> dict[str, Any]:
        """The thread once its last turn has ended."""
        return self.wait_state(
            thread_id,
            lambda s: bool(s["turns"]) and s["turns"][-1]["status"] not in ("queued", "running"),
        )

    def transcript(self, thread_id: str) -> str:
        """``kun replay``'s text, over HTTP."""
        response = self.client.get(f"/v1/threads/{thread_id}/transcript")
        assert response.status_code == 200, response.text
        return response.text

    def log(self, thread_id: str) -> list[dict[str, Any]]:
        """The log's events, read through the API (which flushes what the
        recorder buffers first)."""
        response = self.client.get(f"/v1/threads/{thread_id}/log")
        assert response.status_code == 200, response.text
        return [msgspec.json.decode(line) for line in response.content.splitlines()]

    def last_seq(self, thread_id: str) -> int:
        seq: int = self.log(thread_id)[-1]["seq"]
        return seq
