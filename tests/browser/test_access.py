"""Reaching the server from the page, in headless Chromium against a real
``kun serve``: with a token, ``?token=`` is traded for a cookie that the
page's requests and event streams carry (the address keeps no token); with
the server gone, sending says so and keeps what was typed, which goes
through once it is back."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from kun.model.scripted import text_reply
from kun.testing.fake_provider import FakeProvider
from tests.browser.conftest import TIMEOUT_MS, Shot
from tests.browser.kunserver import KunServer

sync_api = pytest.importorskip("playwright.sync_api")
expect = sync_api.expect
Page = sync_api.Page
Browser = sync_api.Browser

pytestmark = pytest.mark.slow

TOKEN = "s3cret-browser-token"


@pytest.fixture
def guarded(tmp_path: Path, provider: FakeProvider) -> Iterator[KunServer]:
    (tmp_path / "guarded").mkdir()
    server = KunServer(tmp_path / "guarded", provider.base_url, token=TOKEN)
    server.start()
    try:
        yield server
    finally:
        server.close()


def test_a_token_in_the_address_becomes_a_cookie_the_live_list_uses(
    browser: Browser, guarded: KunServer, provider: FakeProvider, shot: Shot
) -> None:
    provider.enqueue(text_reply("behind a token"))
    old = guarded.new_thread(title="guarded")
    context = browser.new_context(base_url=guarded.origin)
    try:
        page = context.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        refused = page.goto("/")
        assert refused is not None and refused.status == 401
        expect(page.locator("#error")).to_contain_text("token")
        expect(page.locator("body")).to_contain_text("?token=")
        shot(page, "refused")
        page.goto(f"/?token={TOKEN}")
        expect(page).to_have_url(re.compile(r"/$"))
        cookies = {c["name"]: c for c in context.cookies()}
        assert cookies["kun_token"]["httpOnly"] and cookies["kun_token"]["sameSite"] == "Strict"
        expect(page.locator(f'#threads li[data-thread-id="{old}"]')).to_be_visible()
        new = guarded.new_thread(title="guarded too")
        row = page.locator(f'#threads li[data-thread-id="{new}"]')
        expect(row).to_be_visible()
        shot(page, "list")
        row.locator("a").click()
        expect(page.locator("#connection")).to_have_attribute("data-state", "open")
        page.locator("#prompt").fill("hello")
        page.locator("#send").click()
        expect(page.locator("#transcript section.turn")).to_have_attribute(
            "data-status", "completed"
        )
        shot(page, "thread")
        assert "token" not in page.url
    finally:
        context.close()


def test_sending_while_the_server_is_away_says_so_and_keeps_the_text(
    page: Page, kun: KunServer, provider: FakeProvider, shot: Shot
) -> None:
    provider.enqueue(text_reply("got it after all"))
    thread = kun.new_thread()
    page.goto(f"/threads/{thread}")
    connection = page.locator("#connection")
    expect(connection).to_have_attribute("data-state", "open")
    kun.stop()
    expect(connection).not_to_have_attribute("data-state", "open")
    page.locator("#prompt").fill("please keep this")
    page.locator("#send").click()
    error = page.locator("#error")
    expect(error).to_be_visible()
    expect(error).not_to_have_text("")
    expect(page.locator("#prompt")).to_have_value("please keep this")
    shot(page, "away")
    kun.start()
    expect(connection).to_have_attribute("data-state", "open", timeout=20_000)
    page.locator("#send").click()
    expect(page.locator("#transcript section.turn")).to_have_attribute("data-status", "completed")
    expect(error).to_be_hidden()
    shot(page, "back")
    state = kun.settled(thread)
    assert [t["items"][0]["text"] for t in state["turns"]] == ["please keep this"]
