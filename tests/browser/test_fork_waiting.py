"""A fork of a turn that waits for the user, from the thread page, in
headless Chromium against a real ``kun serve``: the fork ends that turn at
the fork point as kun's reducer does (aborted, reason ``forked``), so the
new thread's page shows nothing still waiting: no answer to give, the
question cancelled or the approval expired, the thread idle."""

from __future__ import annotations

import re
from typing import Any

import pytest

from kun.model.scripted import tool_reply
from kun.testing.fake_provider import FakeProvider
from tests.browser.conftest import Shot
from tests.browser.kunserver import KunServer
from tests.browser.pages import open_thread, same_items

sync_api = pytest.importorskip("playwright.sync_api")
expect = sync_api.expect
Page = sync_api.Page

pytestmark = pytest.mark.slow

WAITS = {
    "question": (
        tool_reply("request_user_input", {"question": "Which file?"}),
        {},
        "pending_user_inputs",
        "cancelled",
    ),
    "approval": (
        tool_reply("bash", {"command": "rm -rf build"}),
        {"approval_policy": "on-request"},
        "pending_approvals",
        "expired",
    ),
}


@pytest.mark.parametrize("wait", sorted(WAITS))
def test_a_fork_of_a_waiting_turn_shows_it_ended(
    page: Page, kun: KunServer, provider: FakeProvider, shot: Shot, wait: str
) -> None:
    reply, body, pending, closed = WAITS[wait]
    provider.enqueue(reply)
    thread = kun.new_thread(**body)
    turn_id = kun.start_turn(thread, "wait for me")
    waiting: dict[str, Any] = kun.wait_state(thread, lambda s: bool(s[pending]))
    item_id = waiting[pending][0]
    open_thread(page, thread)
    item = page.locator(f'article[data-item-id="{item_id}"]')
    expect(item).to_have_attribute("data-status", "pending")
    expect(page.locator("#activity")).to_have_text("waiting for your answer")
    try:
        page.locator("#fork").click()
        expect(page).not_to_have_url(re.compile(rf"/threads/{thread}$"))
        forked = page.url.rsplit("/", 1)[-1]
        expect(page.locator("body")).to_have_attribute("data-last-seq", str(kun.last_seq(forked)))
        section = page.locator("#transcript section.turn")
        expect(section).to_have_attribute("data-status", "aborted")
        expect(section.locator(".turn-error")).to_have_text("aborted: forked")
        expect(item).to_have_attribute("data-status", closed)
        expect(page.locator("#activity")).to_have_text("idle")
        expect(page.locator("[data-answer-for], [data-answer-option]")).to_have_count(0)
        shot(page, f"forked-while-waiting-{wait}")
        state = kun.state(forked)
        assert state["turns"][0]["abort_reason"] == "forked"
        same_items(page, state)
    finally:
        kun.client.post(f"/v1/threads/{thread}/turns/{turn_id}/interrupt", json={})
        kun.settled(thread)
