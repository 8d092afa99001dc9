"""The recorder's per-thread mutex: exclusion under contention, and a waiter
cancelled while it waits leaves the mutex usable."""

from __future__ import annotations

import anyio
import pytest

from kun.runtime.recorder import _Mutex

pytestmark = pytest.mark.anyio


async def test_contended_holders_never_overlap() -> None:
    mutex = _Mutex()
    inside = 0
    most = 0
    order: list[int] = []

    async def hold(i: int) -> None:
        nonlocal inside, most
        async with mutex:
            inside += 1
            most = max(most, inside)
            await anyio.sleep(0.001)
            order.append(i)
            inside -= 1

    async with anyio.create_task_group() as tg:
        for i in range(8):
            tg.start_soon(hold, i)
    assert most == 1
    assert sorted(order) == list(range(8))
    assert not mutex.locked()


async def test_cancelled_waiter_leaves_it_free() -> None:
    mutex = _Mutex()
    entered = anyio.Event()
    release = anyio.Event()

    async def holder() -> None:
        async with mutex:
            entered.set()
            await release.wait()

    async def waiter(scope_out: list[anyio.CancelScope]) -> None:
        with anyio.CancelScope() as scope:
            scope_out.append(scope)
            async with mutex:
                raise AssertionError("a cancelled waiter must not get in")

    scopes: list[anyio.CancelScope] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(holder)
        await entered.wait()
        tg.start_soon(waiter, scopes)
        await anyio.sleep(0.01)
        assert mutex.locked()
        scopes[0].cancel()
        await anyio.sleep(0.01)
        release.set()
    assert not mutex.locked()
    with anyio.fail_after(1):
        async with mutex:
            assert mutex.locked()
