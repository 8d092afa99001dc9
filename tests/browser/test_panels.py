"""More of what a turn carries, in headless Chromium against a real ``kun
serve``: the model's to-do list shown live in the side panel, and a file
attached from the page going up with the turn that starts."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from kun.model.scripted import text_reply, tool_reply
from kun.testing.fake_provider import FakeProvider
from tests.browser.conftest import Shot
from tests.browser.kunserver import KunServer
from tests.browser.pages import open_thread, same_items

sync_api = pytest.importorskip("playwright.sync_api")
expect = sync_api.expect
Page = sync_api.Page

pytestmark = pytest.mark.slow

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


def test_the_todo_list_shows_in_the_side_panel_as_it_changes(
    page: Page, kun: KunServer, provider: FakeProvider, shot: Shot
) -> None:
    first = [
        {"content": "read a.py", "status": "in_progress"},
        {"content": "fix b.py", "status": "pending"},
    ]
    second = [
        {"content": "read a.py", "status": "completed"},
        {"content": "fix b.py", "status": "in_progress"},
    ]
    provider.enqueue(
        tool_reply("todo_write", {"todos": first}),
        tool_reply("todo_write", {"todos": second}, call_id="call_1"),
        text_reply("on it"),
    )
    thread = kun.new_thread()
    open_thread(page, thread)
    expect(page.locator("#plan-panel")).to_be_hidden()
    kun.start_turn(thread, "plan your work")
    expect(page.locator("#transcript section.turn")).to_have_attribute("data-status", "completed")
    todos = page.locator("#plan-panel ul#todos li")
    expect(todos).to_have_count(2)
    expect(page.locator("#plan-panel")).to_be_visible()
    shot(page, "todos")
    shown = [(li.get_attribute("data-status"), li.inner_text()) for li in todos.all()]
    assert [status for status, _ in shown] == [t["status"] for t in second]
    for (_, text), todo in zip(shown, second, strict=True):
        assert todo["content"] in text and todo["status"].replace("_", " ") in text.replace(
            "_", " "
        ), text


def test_a_file_attached_from_the_page_goes_up_with_the_turn(
    page: Page, kun: KunServer, provider: FakeProvider, shot: Shot, tmp_path: Path
) -> None:
    provider.enqueue(text_reply("a single pixel"))
    dot = tmp_path / "dot.png"
    dot.write_bytes(PNG)
    thread = kun.new_thread()
    open_thread(page, thread)
    page.locator("#attach").set_input_files(str(dot))
    page.locator("#prompt").fill("what is this?")
    page.locator("#send").click()
    expect(page.locator("#transcript section.turn")).to_have_attribute("data-status", "completed")
    expect(page.locator("#attach")).to_have_value("")
    state = kun.settled(thread)
    shot(page, "attached")
    (attachment,) = state["turns"][0]["items"][0]["attachments"]
    assert attachment["name"] == "dot.png" and attachment["mime_type"] == "image/png"
    assert Path(attachment["path"]).read_bytes() == PNG
    sent = provider.requests[-1].body.decode()
    assert base64.b64encode(PNG).decode() in sent
    expect(page.locator('#transcript article[data-type="user_message"]')).to_contain_text("dot.png")
    same_items(page, state)
