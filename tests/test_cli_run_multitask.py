"""``kun run --multitask`` against a real ``kun serve`` whose turn is
stalled mid-answer (see tests/test_cli_remote_steering.py): ``reject`` is
one line and exit 1; ``enqueue`` says the turn is queued, waits for the
running turn to end, then shows its own turn to completion; a value kun
does not know is one usage line. (``steer`` and ``interrupt`` are the
service's and the route's: tests/server/test_api_multitask.py.)"""

from __future__ import annotations

from pathlib import Path

import anyio
import httpx
import pytest

from kun.contracts import events as ev
from tests.test_cli_remote import ANSWER, _one_line, _thread_of, serving
from tests.test_cli_remote_steering import _stalled_turn
from tests.test_cli_remote_threads import STALLED

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def test_kun_run_multitask_on_a_busy_thread(tmp_path: Path) -> None:
    async with serving(tmp_path, [ANSWER, STALLED, ANSWER]) as s:
        thread = _thread_of(await s.kun("run", "one"))
        running = await _stalled_turn(s, thread, "two")
        busy = _one_line(await s.kun("run", "--thread", thread, "--multitask", "reject", "no"))
        assert "is running turn" in busy
        done: list[bytes] = []

        async def queued_run() -> None:
            ran = await s.kun("run", "--thread", thread, "--multitask", "enqueue", "three")
            assert ran.returncode == 0, ran.stderr.decode()
            done.append(ran.stdout + ran.stderr)

        async with anyio.create_task_group() as tg:
            tg.start_soon(queued_run)
            with anyio.fail_after(20):
                while not any(isinstance(e, ev.TurnQueued) for e in s.events(thread)):  # noqa: ASYNC110 (another process)
                    await anyio.sleep(0.05)
            async with httpx.AsyncClient(base_url=s.url) as client:
                stopped = await client.post(f"/v1/threads/{thread}/turns/{running}/interrupt")
                assert stopped.status_code == 200, stopped.text
        said = done[0].decode()
        assert "queued: it starts when the running turn ends" in said
        assert "a.py prints a." in said and said.rstrip().endswith("completed")
        turns = [e.turn_id for e in s.events(thread) if isinstance(e, ev.TurnStarted)]
        queued = [e.turn_id for e in s.events(thread) if isinstance(e, ev.TurnQueued)]
        assert turns[-1] == queued[0]
        unknown = _one_line(await s.kun("run", "--thread", thread, "--multitask", "later", "x"))
        assert "'later' is not one of 'reject', 'enqueue', 'steer', 'interrupt'" in unknown
