"""Continuing an imported thread in kun: turns run through the real service
with a scripted model, as ``kun run --thread`` would."""

from __future__ import annotations

from pathlib import Path

import anyio

from kun.model.scripted import ScriptedModelClient, text_reply
from kun.runtime.recorder import EventRecorder
from kun.runtime.service import TurnService
from kun.store.jsonl import JsonlEventStore
from kun.tools.host import default_host


def continue_in_kun(home: Path, thread_id: str, turns: int) -> None:
    """Run ``turns`` turns of the thread in ``home``, each answered by text."""

    async def run() -> None:
        model = ScriptedModelClient([text_reply(f"answer {n}") for n in range(turns)])
        async with (
            JsonlEventStore(home) as store,
            EventRecorder(store) as recorder,
            anyio.create_task_group() as tg,
        ):
            service = TurnService(recorder, tg, model=model, tools=default_host())
            for n in range(turns):
                turn_id = await service.start_turn(thread_id, f"go on {n}")
                with anyio.fail_after(10):
                    status = (await service.wait_turn(thread_id, turn_id)).status
                assert status == "completed", status
            tg.cancel_scope.cancel()

    anyio.run(run)
