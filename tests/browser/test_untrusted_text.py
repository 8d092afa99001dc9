"""Text the model or the user wrote is data, never markup that runs: in
headless Chromium, HTML and ``javascript:`` links in a message, a reply and
a thread title render inert on the thread page and in the list."""

from __future__ import annotations

import pytest

from kun.model.scripted import text_reply
from kun.testing.fake_provider import FakeProvider
from tests.browser.conftest import Shot
from tests.browser.kunserver import KunServer

sync_api = pytest.importorskip("playwright.sync_api")
expect = sync_api.expect
Page = sync_api.Page

pytestmark = pytest.mark.slow

USER = "<img src=x onerror=\"window.kunPwned='user'\"> is this <b>bold</b>?"
REPLY = (
    "<img src=x onerror=\"window.kunPwned='reply'\">\n\n"
    "<script>window.kunPwned='script'</script>\n\n"
    "[click me](javascript:window.kunPwned='link') and "
    "<a href=\"javascript:window.kunPwned='anchor'\">raw</a> and **fine**"
)
INERT = """() => ({
    pwned: window.kunPwned || null,
    images: document.querySelectorAll('img[src="x"], [onerror], script:not([src])').length,
    scripted: [...document.querySelectorAll('a')].filter(
        a => a.href.trim().toLowerCase().startsWith('javascript:')).length,
})"""


def _inert(page: Page) -> None:
    assert page.evaluate(INERT) == {"pwned": None, "images": 0, "scripted": 0}


def test_markup_in_messages_replies_and_titles_stays_text(
    page: Page, kun: KunServer, provider: FakeProvider, shot: Shot
) -> None:
    provider.enqueue(text_reply(REPLY))
    thread = kun.new_thread()
    kun.start_turn(thread, USER)
    kun.settled(thread)
    page.goto(f"/threads/{thread}")
    expect(page.locator("#transcript section.turn")).to_have_attribute("data-status", "completed")
    shot(page, "thread")
    _inert(page)
    reply = page.locator('#transcript article[data-type="assistant_text"] .body')
    expect(reply.locator("strong")).to_have_text("fine")
    expect(page.locator('#transcript article[data-type="user_message"] .body')).to_contain_text(
        "<b>bold</b>"
    )
    links = reply.get_by_text("click me")
    if links.count():
        links.first.click()
    reply.get_by_text("raw").first.click()
    _inert(page)
    page.goto("/")
    expect(page.locator(f'#threads li[data-thread-id="{thread}"]')).to_be_visible()
    shot(page, "list")
    _inert(page)
