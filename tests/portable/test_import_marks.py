"""Every import ends its log with ``thread_imported``: bundles and other
agents' sessions alike (a session has no checkpoints today, but the rule
that nothing recorded before an import is restored must not depend on it).
A bundle exported while a file restore was under way is refused: settling
it here would record as restored, at a seq after the import, a change
planned elsewhere."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from kun.contracts import events as ev
from kun.contracts.items import FileCheckpoint
from kun.portable.bundle import export_thread
from kun.portable.errors import BundleRefused
from kun.portable.sessions import import_session
from kun.portable.unbundle import import_bundle
from kun.store.jsonl import JsonlEventStore
from kun.store.paths import log_path
from kun.store.reader import read_log
from kun.store.replay import replay_log
from kun.testing.logbuilder import LogBuilder
from tests.portable.test_sessions import _write, claude_lines, codex_lines


@pytest.mark.parametrize(
    ("source", "lines"), [("codex", codex_lines), ("claude-code", claude_lines)]
)
def test_a_session_import_ends_with_thread_imported(
    tmp_path: Path, source: str, lines: Any
) -> None:
    home = tmp_path / "home"
    result = import_session(
        home, _write(tmp_path / "s.jsonl", lines()), source, replace_changed=False
    )
    log = log_path(home, result.thread_id)
    last = list(read_log(log))[-1]
    assert isinstance(last, ev.ThreadImported) and last.source == source
    assert replay_log(log).imported_through == last.seq


def midway_bundle(tmp_path: Path) -> Path:
    """A bundle of a thread exported while a file restore was under way."""
    home = tmp_path / "a"
    b = LogBuilder("thr_midway")
    b.create(workspace="/w", title="t", provider="p", model="m")
    turn = b.start_turn("write")
    b.complete()
    point = FileCheckpoint(path="x.txt", before=None, after_sha256=None)
    b.emit(ev.FilesRestoreStarted, before_turn_id=turn, planned=(point,))
    events = b.events

    async def write() -> None:
        async with JsonlEventStore(home) as store:
            await store.append("thr_midway", events, expected_seq=0)

    anyio.run(write)
    bundle = tmp_path / "t.kun.tar"
    export_thread(home, "thr_midway", bundle)
    return bundle


def test_a_bundle_with_a_restore_under_way_is_refused(tmp_path: Path) -> None:
    bundle = midway_bundle(tmp_path)
    with pytest.raises(BundleRefused, match="a file restore was under way"):
        import_bundle(tmp_path / "b", bundle)
    assert not (tmp_path / "b" / "threads" / "thr_midway").exists()
