"""``kun run``: one turn from the terminal, live."""

from __future__ import annotations

import signal
import sys
from dataclasses import dataclass
from pathlib import Path

import anyio

from kun.config import load_config
from kun.contracts.threads import ApprovalPolicy, ThreadSettings
from kun.domain.state import TurnState
from kun.model.factory import build_router
from kun.runtime.turn_input import check_prompt
from kun.session import open_service
from kun.terminal import LiveView


@dataclass(frozen=True)
class RunOptions:
    home: Path
    prompt: str
    thread_id: str | None
    provider: str | None
    model: str | None
    workspace: Path
    approval: ApprovalPolicy | None
    config: Path | None


async def run_prompt(options: RunOptions) -> tuple[str, TurnState]:
    check_prompt(options.prompt)  # before a thread is created for it
    config = load_config(options.config, home=options.home)
    router = build_router(config)
    target = options.provider
    if target and options.model:
        target = f"{target}/{options.model}"
    client = router.select(target)
    interactive = sys.stdin.isatty() and sys.stdout.isatty()
    async with router, open_service(options.home, client) as service:
        if options.thread_id is not None:
            thread_id = options.thread_id
            await service.recorder.open(thread_id)
        else:
            settings = ThreadSettings(
                workspace=str(options.workspace.resolve()),
                provider=client.provider,
                model=client.model,
                approval_policy=options.approval or "on-request",
            )
            thread_id = await service.create_thread(settings)
        if options.approval is not None and options.thread_id is not None:
            await service.update_thread(thread_id, approval_policy=options.approval)
        view = LiveView(service, thread_id, sys.stdout, interactive=interactive, color=interactive)
        after = service.state(thread_id).last_seq
        turn_id = await service.start_turn(
            thread_id, options.prompt, disable_user_input=not interactive
        )
        async with anyio.create_task_group() as tg:

            async def on_ctrl_c() -> None:
                with anyio.open_signal_receiver(signal.SIGINT) as signals:
                    async for _ in signals:
                        sys.stderr.write("\ninterrupting the turn...\n")
                        await service.interrupt_turn(thread_id, turn_id)
                        return

            tg.start_soon(on_ctrl_c)
            await view.follow(after, turn_id)
            turn = await service.wait_turn(thread_id, turn_id)
            tg.cancel_scope.cancel()
    return thread_id, turn
