"""``kun --server URL steer | interrupt``: reach a turn that a running ``kun
serve`` runs (:mod:`kun.cli.steering` for the commands and their lines).

Without ``--turn`` the running turn is the thread's last one that has not
settled, read from the thread's projection; between that read and the
request the turn may end, and the server's 409 (``turn_not_running``)
is then the one line printed, as are its 404s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kun.cli.remote import Remote, explained
from kun.cli.steering import NoRunningTurn, interrupted_line, steered_line

if TYPE_CHECKING:
    from kun.client.legacy import KunClient

__all__ = ["remote_interrupt", "remote_steer"]

_SETTLED = frozenset({"completed", "failed", "aborted"})


def remote_steer(remote: Remote, thread: str, turn_id: str | None, text: str) -> str:
    with explained(remote), remote.client() as client:
        thread_id, turn_id = _running(client, thread, turn_id)
        client.steer(thread_id, turn_id, text)
    return steered_line(thread_id, turn_id)


def remote_interrupt(remote: Remote, thread: str, turn_id: str | None, *, discard: bool) -> str:
    with explained(remote), remote.client() as client:
        thread_id, turn_id = _running(client, thread, turn_id)
        settled = client.interrupt(thread_id, turn_id, discard=discard)
    return interrupted_line(thread_id, turn_id, settled["status"])


def _running(client: KunClient, thread: str, turn_id: str | None) -> tuple[str, str]:
    if turn_id is not None:
        return thread, turn_id
    state = client.thread(thread)
    thread_id: str = state["thread_id"]
    for turn in reversed(state.get("turns", [])):
        if turn["status"] not in _SETTLED:
            return thread_id, turn["turn_id"]
    raise NoRunningTurn(thread_id)
