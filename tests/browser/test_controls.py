"""The thread page's controls in headless Chromium against a real ``kun
serve``: a pending bash call approved from the page runs once; a running
turn steered then interrupted from the page; the prompt used with the
keyboard alone."""

from __future__ import annotations

import pytest

from kun.contracts.model import CompletedChunk, TextDeltaChunk
from kun.model.scripted import text_reply, tool_reply
from kun.testing.fake_provider import FakeProvider, FakeResponse
from tests.browser.conftest import Shot
from tests.browser.kunserver import KunServer
from tests.browser.pages import open_thread, same_items

sync_api = pytest.importorskip("playwright.sync_api")
expect = sync_api.expect
Page = sync_api.Page

pytestmark = pytest.mark.slow

MAX_TABS = 40
FOCUS = """() => {
    const e = document.activeElement, s = getComputedStyle(e);
    const outline = s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) > 0;
    return {id: e.id, what: e.outerHTML.slice(0, 80), visible: outline || s.boxShadow !== 'none'};
}"""


def test_a_bash_call_approved_from_the_page_runs_once(
    page: Page, kun: KunServer, provider: FakeProvider, shot: Shot
) -> None:
    call = tool_reply("bash", {"command": "echo approved-run"})
    provider.enqueue(FakeResponse(chunks=tuple(call)), text_reply("it ran"))
    thread = kun.new_thread(approval_policy="on-request")
    open_thread(page, thread)
    page.locator("#prompt").fill("run it")
    page.locator("#send").click()
    approve = page.locator("button[data-approve]")
    expect(approve).to_have_count(1)
    pending = kun.state(thread)["pending_approvals"]
    expect(approve).to_have_attribute("data-approve", pending[0])
    expect(page.locator(f'button[data-deny="{pending[0]}"]')).to_be_visible()
    shot(page, "asked")
    approve.click()
    section = page.locator("#transcript section.turn")
    expect(section).to_have_attribute("data-status", "completed")
    expect(page.locator("button[data-approve]")).to_have_count(0)
    state = kun.settled(thread)
    expect(page.locator("body")).to_have_attribute("data-last-seq", str(kun.last_seq(thread)))
    shot(page, "approved")
    items = state["turns"][0]["items"]
    assert [i["status"] for i in items if i["type"] == "approval"] == ["approved"]
    results = [i for i in items if i["type"] == "tool_result"]
    assert len(results) == 1 and "approved-run" in results[0]["output"]
    same_items(page, state)


def test_a_running_turn_is_steered_then_interrupted_from_the_page(
    page: Page, kun: KunServer, provider: FakeProvider, shot: Shot
) -> None:
    chunks = (*(TextDeltaChunk(text=f"w{n} ") for n in range(100)), CompletedChunk())
    provider.enqueue(FakeResponse(chunks=chunks, per_event=True, piece_delay=0.1))
    thread = kun.new_thread()
    open_thread(page, thread)
    send, interrupt = page.locator("#send"), page.locator("#interrupt")
    expect(interrupt).to_be_disabled()
    idle_label = send.inner_text()
    page.locator("#prompt").fill("count")
    send.click()
    section = page.locator("#transcript section.turn")
    expect(section).to_have_attribute("data-status", "running")
    expect(interrupt).to_be_enabled()
    expect(send).not_to_have_text(idle_label)
    assert "steer" in send.inner_text().lower()
    page.locator("#prompt").fill("also count backwards")
    with page.expect_response(lambda r: r.url.endswith("/steer")) as steered:
        send.click()
    assert steered.value.status == 202
    shot(page, "steered")
    with page.expect_response(lambda r: r.url.endswith("/interrupt")) as stopped:
        interrupt.click()
    assert stopped.value.status == 200
    expect(section).to_have_attribute("data-status", "aborted")
    expect(interrupt).to_be_disabled()
    expect(send).to_have_text(idle_label)
    state = kun.settled(thread)
    expect(page.locator("body")).to_have_attribute("data-last-seq", str(kun.last_seq(thread)))
    shot(page, "interrupted")
    turn = state["turns"][0]
    assert turn["status"] == "aborted" and turn["steered"] == 1
    messages = [i["text"] for i in turn["items"] if i["type"] == "user_message"]
    assert messages == ["count", "also count backwards"]
    same_items(page, state)


def test_the_prompt_works_from_the_keyboard_alone(
    page: Page, kun: KunServer, provider: FakeProvider, shot: Shot
) -> None:
    provider.enqueue(text_reply("typed and sent"))
    thread = kun.new_thread()
    open_thread(page, thread)
    for _ in range(MAX_TABS):
        page.keyboard.press("Tab")
        focused = page.evaluate(FOCUS)
        assert focused["visible"], f"no visible focus on {focused['what']}"
        if focused["id"] == "prompt":
            break
    else:
        pytest.fail(f"#prompt not reached in {MAX_TABS} presses of Tab")
    page.keyboard.type("line one")
    page.keyboard.press("Shift+Enter")
    page.keyboard.type("line two")
    assert page.locator("#prompt").input_value() == "line one\nline two"
    shot(page, "typed")
    page.keyboard.press("Enter")
    section = page.locator("#transcript section.turn")
    expect(section).to_have_attribute("data-status", "completed")
    state = kun.settled(thread)
    expect(page.locator("body")).to_have_attribute("data-last-seq", str(kun.last_seq(thread)))
    shot(page, "sent")
    assert [t["items"][0]["text"] for t in state["turns"]] == ["line one\nline two"]
    same_items(page, state)


def test_a_plan_mode_turn_is_started_from_the_page(
    page: Page, kun: KunServer, provider: FakeProvider, shot: Shot
) -> None:
    provider.enqueue(text_reply("here is the plan"), text_reply("and now for real"))
    thread = kun.new_thread()
    open_thread(page, thread)
    page.locator("#plan-mode").check()
    page.locator("#prompt").fill("plan it first")
    page.locator("#send").click()
    sections = page.locator("#transcript section.turn")
    expect(sections).to_have_attribute("data-status", "completed")
    page.locator("#plan-mode").uncheck()
    page.locator("#prompt").fill("go")
    page.locator("#send").click()
    expect(sections.nth(1)).to_have_attribute("data-status", "completed")
    shot(page, "planned")
    state = kun.settled(thread)
    assert [t["plan_mode"] for t in state["turns"]] == [True, False]
    same_items(page, state)
