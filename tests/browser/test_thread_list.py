"""The thread list in headless Chromium: a thread created through the API,
and its turn running then ending, show up live, without a reload."""

from __future__ import annotations

import re
import time

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
    expect(row.locator(".cost")).to_have_text("$0.00")
    expect(row).to_contain_text(str(kun.workspace))
    expect(row).to_contain_text("fake-model")
    shot(page, "two")
    kun.start_turn(new, "count")
    expect(row).to_have_attribute("data-status", "running")
    expect(row).to_contain_text("running")
    shot(page, "running")
    expect(row).to_have_attribute("data-status", "completed", timeout=10_000)
    expect(row).to_contain_text("completed")
    expect(row.locator(".cost")).to_have_text("cost unknown")
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


def test_the_list_pages_filters_and_moves_a_later_thread_up_live(
    page: Page, kun: KunServer, shot: Shot
) -> None:
    tag = f"paged{time.monotonic_ns()}"
    older = kun.new_thread(title="older than the tagged ones")
    ids = [kun.new_thread(title=f"{tag} {n}") for n in range(7)]
    page.goto("/?limit=3")
    rows = page.locator("#threads li[data-thread-id]")
    more = page.locator("#more")

    def shown() -> list[str]:
        got: list[str] = rows.evaluate_all("rows => rows.map(r => r.dataset.threadId)")
        return got

    expect(rows).to_have_count(3)
    assert shown() == ids[:3:-1]
    expect(page.locator("#count")).to_have_text("The latest 3 threads; older ones below")
    shot(page, "first page")
    more.click()
    expect(rows).to_have_count(6)
    assert shown() == ids[:0:-1]
    expect(more).to_be_focused()
    kun.client.patch(f"/v1/threads/{ids[2]}", json={"title": f"{tag} 2 renamed"})
    expect(rows.first).to_have_attribute("data-thread-id", ids[2])
    expect(rows.first.locator("a")).to_have_text(f"{tag} 2 renamed")
    assert shown() == [ids[2], ids[6], ids[5], ids[4], ids[3], ids[1]]
    kun.client.patch(f"/v1/threads/{ids[0]}", json={"title": f"{tag} 0 renamed"})
    expect(rows.first).to_have_attribute("data-thread-id", ids[0])
    expect(rows).to_have_count(7)
    shot(page, "a thread not loaded yet moved up")
    more.click()
    expect(page.locator(f'#threads li[data-thread-id="{older}"]')).to_have_count(1)
    assert [t for t in shown() if t in ids] == [
        ids[0],
        ids[2],
        ids[6],
        ids[5],
        ids[4],
        ids[3],
        ids[1],
    ]
    page.locator("#filter").fill(tag.upper())
    expect(rows).to_have_count(3)
    expect(page.locator("#count")).to_have_text(f"3 threads matching “{tag.upper()}”, more below")
    more.click()
    more.click()
    expect(rows).to_have_count(7)
    expect(more).to_be_hidden()
    expect(rows.last.locator("a")).to_be_focused()
    expect(page.locator("#count")).to_have_text(f"7 threads matching “{tag.upper()}”")
    shot(page, "filtered")
    page.locator("#filter").fill(f"{tag} nothing")
    expect(page.locator("#count")).to_have_text(f"No thread matches “{tag} nothing”")
    expect(rows).to_have_count(0)
    expect(page.locator("#empty")).to_be_hidden()
    page.goto("/?limit=1")
    page.locator("#filter").fill(tag)
    expect(page.locator("#count")).to_have_text(f"1 thread matching “{tag}”, more below")
    more.click()
    more.click()
    expect(rows).to_have_count(3)
    assert shown() == [ids[0], ids[2], ids[6]]
    kun.client.patch(f"/v1/threads/{ids[6]}", json={"title": f"{tag} 6 renamed"})
    expect(rows.first).to_have_attribute("data-thread-id", ids[6])
    expect(rows).to_have_count(3)
    assert shown() == [ids[6], ids[0], ids[2]]
    more.click()
    expect(rows).to_have_count(4)
    assert shown() == [ids[6], ids[0], ids[2], ids[5]]
    kun.client.patch(f"/v1/threads/{ids[2]}", json={"title": f"{tag} 2 again"})
    kun.client.patch(f"/v1/threads/{ids[0]}", json={"title": f"{tag} 0 again"})
    expect(rows.first).to_have_attribute("data-thread-id", ids[0])
    expect(rows.nth(1).locator("a")).to_have_text(f"{tag} 2 again")
    assert shown() == [ids[0], ids[2], ids[6], ids[5]]
