"""The thread list in headless Chromium: a thread created through the API,
and its turn running then ending, show up live, without a reload."""

from __future__ import annotations

import re

import pytest

from kun.contracts.model import CompletedChunk, TextDeltaChunk
from kun.testing.fake_provider import FakeProvider, FakeResponse
from tests.browser.conftest import Shot
from tests.browser.kunserver import KunServer

sync_api = pytest.importorskip("playwright.sync_api")
expect = sync_api.expect
Page = sync_api.Page

pytestmark = pytest.mark.slow


def test_the_list_follows_new_threads_and_their_turns_live(
    page: Page, kun: KunServer, provider: FakeProvider, shot: Shot
) -> None:
    chunks = (*(TextDeltaChunk(text=f"w{n} ") for n in range(10)), CompletedChunk())
    provider.enqueue(FakeResponse(chunks=chunks, per_event=True, piece_delay=0.1))
    old = kun.new_thread(title="the old one")
    listed = len(kun.client.get("/v1/threads", params={"limit": 500}).json()["threads"])
    page.goto("/")
    rows = page.locator("#threads li[data-thread-id]")
    expect(rows).to_have_count(listed)
    old_row = page.locator(f'#threads li[data-thread-id="{old}"]')
    expect(old_row.locator(f'a[href="/threads/{old}"]')).to_have_text("the old one")
    page.evaluate("window.__kunNotReloaded = true")
    shot(page, "one")
    new = kun.new_thread(title="the new one")
    row = page.locator(f'#threads li[data-thread-id="{new}"]')
    expect(row.locator(f'a[href="/threads/{new}"]')).to_have_text("the new one")
    expect(rows).to_have_count(listed + 1)
    expect(row).to_have_attribute("data-status", "idle")
    expect(row).to_contain_text(str(kun.workspace))
    expect(row).to_contain_text("fake-model")
    shot(page, "two")
    kun.start_turn(new, "count")
    expect(row).to_have_attribute("data-status", "running")
    expect(row).to_contain_text("running")
    shot(page, "running")
    expect(row).to_have_attribute("data-status", "completed", timeout=10_000)
    expect(row).to_contain_text("completed")
    shot(page, "completed")
    assert page.evaluate("window.__kunNotReloaded") is True


def test_a_thread_is_created_from_the_list(page: Page, kun: KunServer, shot: Shot) -> None:
    page.goto("/")
    page.locator("#new-workspace").fill(str(kun.workspace / "no such folder"))
    page.locator("#create").click()
    expect(page.locator("#error")).to_contain_text("no such folder")
    expect(page).to_have_url(kun.url("/"))
    shot(page, "refused")
    page.locator("#new-workspace").fill(str(kun.workspace))
    page.locator("#new-title").fill("made in the page")
    page.locator("#create").click()
    expect(page).to_have_url(re.compile(r"/threads/thr_[0-9a-z]+$"))
    expect(page.locator("#connection")).to_have_attribute("data-state", "open")
    shot(page, "created")
    state = kun.state(page.url.rsplit("/", 1)[-1])
    assert state["settings"]["title"] == "made in the page"
    assert state["settings"]["workspace"] == str(kun.workspace)
