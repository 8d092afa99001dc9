"""The browser tests' own ground: Chromium reaches the real ``kun serve``,
whose restart keeps its port and home (what the resume test relies on), and
the loopback provider answers its turns."""

from __future__ import annotations

import json
import signal

import pytest

from kun.model.scripted import text_reply
from kun.testing.fake_provider import FakeProvider
from tests.browser.conftest import Shot
from tests.browser.kunserver import KunServer

sync_api = pytest.importorskip("playwright.sync_api")
Page = sync_api.Page

pytestmark = pytest.mark.slow


def test_chromium_reads_the_api_of_a_restarted_server(
    page: Page, kun: KunServer, provider: FakeProvider, shot: Shot
) -> None:
    provider.enqueue(text_reply("hello from the fake"))
    thread = kun.new_thread(title="fixture check")
    kun.start_turn(thread, "hi")
    assert kun.settled(thread)["turns"][0]["status"] == "completed"
    kun.restart(signal.SIGKILL)
    page.goto(f"/v1/threads/{thread}")
    shot(page, "projection")
    shown = json.loads(page.locator("body").inner_text())
    assert shown["thread_id"] == thread
    assert shown["turns"][0]["items"][-1]["text"] == "hello from the fake"
    assert kun.last_seq(thread) > 1
