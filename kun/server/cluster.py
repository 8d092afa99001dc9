"""A ``kun serve`` worker among others sharing one PostgreSQL store.

Each worker, beside serving its own requests (:func:`member`):

- answers the calls other workers forward for the threads it writes (a
  turn to start, steering, an interrupt, an approval's or a question's
  answer) over the store's control channel (:mod:`kun.store.pg_control`),
  by making the same call of its own adapter
  (:meth:`kun.app.local.LocalKun.serve_call`); refusals travel with the
  status and code this worker's API would answer;
- forwards its own such calls for threads another worker writes
  (:class:`ControlForwarder`, :mod:`kun.app.forwarding`);
- settles, every :data:`SETTLE_SECONDS`, the threads a dead worker was
  writing (:meth:`kun.store.pg_cluster.PostgresCluster.orphaned`): open
  turns as ``orphaned``, a turn waiting for an answer re-armed here, as a
  restarted single server does for its own;
- takes the threads that wait for a worker serving their workspace
  (:meth:`~kun.store.pg_cluster.PostgresCluster.claim_waiting`), woken by
  ``NOTIFY`` and looking every :data:`WAKE_SECONDS` anyway.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import anyio
import msgspec
from anyio.abc import TaskStatus

from kun.app.forwarding import BROADCAST, Call, Refusal, Reply, reply_to
from kun.app.local import NOT_MINE, LocalKun
from kun.errors import KunError
from kun.runtime.reconcile import reconcile_orphaned_turns
from kun.server.errors import status_of
from kun.store.errors import ThreadLocked
from kun.store.pg_cluster import PostgresCluster, covers
from kun.store.pg_control import PostgresControl
from kun.store.port import SharedStore

__all__ = ["ControlForwarder", "member"]

_log = logging.getLogger(__name__)

SETTLE_SECONDS = 1.0
WAKE_SECONDS = 1.0
PATIENCE_SECONDS = 10.0
"""How long a forwarded call waits for the thread's writer (an interrupt
waits for the turn to settle there)."""
BROADCAST_SECONDS = 3.0
"""How long an answer to an approval or a question no worker here knows
waits for another worker to take it before it is refused."""
_KIND = "call"
_REPLY = msgspec.json.Decoder(Reply)
_CALL = msgspec.json.Decoder(Call)


class ControlForwarder:
    """:class:`kun.app.forwarding.Forwarder` over the control channel and
    the cluster tables, for a worker reaching the workspaces under
    ``roots``."""

    def __init__(
        self, control: PostgresControl, cluster: PostgresCluster, roots: Sequence[str]
    ) -> None:
        self._control = control
        self._cluster = cluster
        self.roots = tuple(roots)

    def serves(self, workspace: str | None) -> bool:
        return covers(self.roots, workspace)

    async def wait(self, thread_id: str, workspace: str | None) -> None:
        await self._cluster.wait(thread_id, workspace)

    async def unserved(self, workspace: str | None) -> str | None:
        workers = await self._cluster.workers()
        if any(w.serves(workspace) for w in workers):
            return None
        return (
            f"no running worker reaches the workspace {workspace}: start kun serve "
            f"--store ... --workspace-root DIR on a machine that has it"
        )

    async def ask(self, thread_id: str, call: Call) -> Reply | None:
        broadcast = thread_id == BROADCAST
        raw = await self._control.ask(
            thread_id,
            _KIND,
            msgspec.json.encode(call),
            patience=BROADCAST_SECONDS if broadcast else PATIENCE_SECONDS,
            broadcast=broadcast,
        )
        return None if raw is None else _REPLY.decode(raw)


async def member(
    kun: LocalKun,
    store: SharedStore,
    roots: Sequence[str],
    *,
    task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Be one of the workers of ``store`` until cancelled (see the module
    docstring); ``roots``: the workspaces this worker reaches."""
    control = store.control()
    cluster = store.cluster()

    async def handle(thread_id: str, _kind: str, body: bytes) -> bytes | None:
        try:
            answer = await kun.serve_call(thread_id, _CALL.decode(body))
        except KunError as exc:
            status, code, field = status_of(exc)
            refusal = Refusal(status=status, code=code, message=str(exc), field=field)
            return msgspec.json.encode(Reply(error=refusal))
        return None if answer is NOT_MINE else msgspec.json.encode(reply_to(answer))

    def answers(thread_id: str) -> bool:
        return thread_id == BROADCAST or store.holds(thread_id)

    kun.forward = ControlForwarder(control, cluster, roots)
    await cluster.join(roots)
    try:
        async with anyio.create_task_group() as tg:
            await tg.start(control.serve, handle, answers)
            tg.start_soon(_settle_the_dead, kun, store)
            tg.start_soon(_take_the_waiting, kun, store, roots)
            task_status.started()
    finally:
        kun.forward = None
        with anyio.CancelScope(shield=True), anyio.move_on_after(5):
            try:
                await cluster.leave()
            except KunError:
                pass  # the session's end removes the row anyway


async def _settle_the_dead(kun: LocalKun, store: SharedStore) -> None:
    cluster = store.cluster()
    while True:
        try:
            for thread_id in await cluster.orphaned():
                await settle(kun, thread_id)
        except KunError as exc:
            _log.warning("looking for the threads of workers that died failed: %s", exc)
        await anyio.sleep(SETTLE_SECONDS)


async def settle(kun: LocalKun, thread_id: str) -> None:
    """Take up a thread a dead worker was writing: settle its open turns
    as ``orphaned`` (re-arming one that waits for an answer). Another
    worker that took it first keeps it."""
    service = kun.service
    try:
        async with service.holding(thread_id):
            await service.open_thread(thread_id)
            waiting: list[str] = []
            touched = await reconcile_orphaned_turns(
                service, threads=[thread_id], waiting=waiting, start_queued=False
            )
            if touched:
                _log.info("settled the turns a dead worker left in thread %s", thread_id)
            state = service.state(thread_id)
            if state.queued_turns:
                workspace = state.settings.workspace
                if kun.forward is None or kun.forward.serves(workspace):
                    await service.advance(thread_id)
                else:
                    await kun.forward.wait(thread_id, workspace)
            engine = kun.engine
            if engine is not None:
                for waiter in waiting:
                    state = await service.recorder.view(waiter)
                    await engine.take_waiting(waiter, state.settings)
    except ThreadLocked:
        return
    except KunError as exc:
        _log.warning("settling thread %s, which a dead worker wrote, failed: %s", thread_id, exc)


async def _take_the_waiting(kun: LocalKun, store: SharedStore, roots: Sequence[str]) -> None:
    cluster = store.cluster()
    while True:
        try:
            conn = await cluster.listen()
        except KunError as exc:
            _log.warning("listening for waiting threads failed: %s", exc)
            await anyio.sleep(WAKE_SECONDS)
            continue
        try:
            while True:
                for thread_id in await cluster.claim_waiting(roots):
                    await take(kun, thread_id)
                with anyio.move_on_after(WAKE_SECONDS):
                    async for _note in conn.notifies():
                        break
        except KunError as exc:
            _log.warning("taking waiting threads failed: %s", exc)
        except Exception as exc:  # the driver's, on a lost connection
            _log.warning("the waiting threads' connection was lost: %s", exc)
        finally:
            with anyio.CancelScope(shield=True):
                await conn.close()


async def take(kun: LocalKun, thread_id: str) -> None:
    """Run the queued turns of a thread claimed from the waiting list (its
    writer lock already held): settle what a dead writer left, start the
    next queued turn; let go when none runs."""
    service = kun.service
    try:
        async with service.holding(thread_id):
            await service.open_thread(thread_id)
            await reconcile_orphaned_turns(service, threads=[thread_id])
            await service.advance(thread_id)
    except KunError as exc:
        _log.warning("taking waiting thread %s failed: %s", thread_id, exc)
