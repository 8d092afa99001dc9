"""Thread-level warnings on the thread page: the ones outside any open turn
(an import, a reconciliation, a goal that stopped resuming, a log repair)
are listed in the side panel in seq order, in words, each exactly once
across reconnects; a warning inside a running turn stays one of its items."""

from __future__ import annotations

import time

import msgspec
import pytest

from kun.contracts.model import CompletedChunk, TextDeltaChunk
from kun.testing.fake_provider import FakeProvider, FakeResponse
from tests.browser.conftest import Shot
from tests.browser.kunserver import KunServer
from tests.browser.pages import open_thread, same_items

sync_api = pytest.importorskip("playwright.sync_api")
expect = sync_api.expect
Page = sync_api.Page

pytestmark = pytest.mark.slow


def _append(kun: KunServer, thread_id: str, *events: dict[str, object], torn: bytes = b"") -> None:
    """Write ``events`` after the log's last one while the server is stopped
    (as another kun process, an import or a reconciliation would)."""
    seq = kun.last_seq(thread_id)
    kun.stop()
    lines = b""
    for n, event in enumerate(events, 1):
        fields = {"seq": seq + n, "at": int(time.time() * 1000), "thread_id": thread_id, **event}
        lines += msgspec.json.encode(fields) + b"\n"
    with (kun.home / "threads" / thread_id / "events.jsonl").open("ab") as log:
        log.write(lines + torn)
    kun.start()


def _listed(page: Page) -> list[tuple[int, str]]:
    got: list[list[object]] = page.locator("#warning-list li").evaluate_all(
        "lis => lis.map(li => [Number(li.dataset.seq), li.dataset.code])"
    )
    return [(int(str(seq)), str(code)) for seq, code in got]


def test_thread_warnings_are_listed_in_seq_order_once_across_reconnects(
    page: Page, kun: KunServer, provider: FakeProvider, shot: Shot
) -> None:
    chunks = (TextDeltaChunk(text="cut sh"), CompletedChunk(stop_reason="length"))
    provider.enqueue(FakeResponse(chunks=chunks))
    thread = kun.new_thread(title="warned")
    turn = kun.start_turn(thread, "write a lot")
    kun.settled(thread)
    open_thread(page, thread)
    truncated = page.locator('#transcript article[data-type="warning"]')
    expect(truncated).to_contain_text("output_truncated")
    expect(page.locator("#warnings")).to_be_hidden()
    same_items(page, kun.state(thread))
    first = kun.last_seq(thread) + 1
    _append(
        kun,
        thread,
        {"kind": "warning", "code": "import_skipped", "message": "2 lines were not imported"},
        {"kind": "warning", "turn_id": turn, "code": "late", "message": "after the turn ended"},
        {"kind": "warning", "code": "goal_resume_exhausted", "message": "gave up"},
        torn=b'{"kind": "warning", "seq": 99',
    )
    kun.client.patch(f"/v1/threads/{thread}", json={"title": "warned again"})
    expect(page.locator("#title")).to_have_text("warned again", timeout=10_000)
    expect(page.locator("#warning-list li")).to_have_count(4)
    state = kun.state(thread)
    assert [w["seq"] for w in state["warnings"]] == [first, first + 1, first + 2]
    want = [
        (first, "import_skipped"),
        (first + 1, "late"),
        (first + 2, "goal_resume_exhausted"),
        (first + 3, "log_repaired"),
    ]
    assert _listed(page) == want
    expect(page.locator("#warnings-h")).to_have_text("Thread warnings (4)")
    item = page.locator("#warning-list li").first
    expect(item).to_contain_text("Warning import_skipped at seq")
    expect(item).to_contain_text("2 lines were not imported")
    expect(item.locator("a")).to_have_attribute("href", f"?until={first}")
    expect(page.locator("#warning-list li").last).to_contain_text("bytes from line")
    same_items(page, state)
    shot(page, "after a restart")
    page.reload()
    expect(page.locator("#connection")).to_have_attribute("data-state", "open")
    expect(page.locator("#warning-list li")).to_have_count(4)
    assert _listed(page) == want
    page.goto(f"/threads/{thread}?until={first + 1}")
    expect(page.locator("#warning-list li")).to_have_count(2)
    assert _listed(page) == want[:2]
