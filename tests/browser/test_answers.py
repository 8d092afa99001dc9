"""Answering the agent from the thread page, in headless Chromium against a
real ``kun serve``: questions answered by an offered option and by typing;
a command denied from the page does not run, while a file write (which
``on-request`` lets run) shows its diff."""

from __future__ import annotations

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


def _items(state: dict[str, object], kind: str) -> list[dict[str, object]]:
    turns: list[dict[str, list[dict[str, object]]]] = state["turns"]  # type: ignore[assignment]
    return [i for t in turns for i in t["items"] if i["type"] == kind]


def test_questions_are_answered_by_an_option_and_by_typing(
    page: Page, kun: KunServer, provider: FakeProvider, shot: Shot
) -> None:
    provider.enqueue(
        tool_reply("request_user_input", {"question": "Which file?", "options": ["a.py", "b.py"]}),
        tool_reply("request_user_input", {"question": "Why?"}, call_id="call_1"),
        text_reply("thanks"),
    )
    thread = kun.new_thread()
    open_thread(page, thread)
    kun.start_turn(thread, "ask me twice")
    option = page.locator("button[data-answer-option]", has_text="b.py")
    expect(option).to_be_visible()
    first = kun.state(thread)["pending_user_inputs"][0]
    expect(option).to_have_attribute("data-answer-option", first)
    shot(page, "options")
    option.click()
    expect(page.locator(f'article[data-item-id="{first}"]')).to_have_attribute(
        "data-status", "answered"
    )
    typed = page.locator("input[data-answer-for]")
    expect(typed).to_have_count(1)
    waiting = kun.wait_state(thread, lambda s: bool(s["pending_user_inputs"]))
    second = waiting["pending_user_inputs"][0]
    expect(typed).to_have_attribute("data-answer-for", second)
    typed.fill("it reads b")
    shot(page, "typing")
    page.locator(f'button[data-answer-submit="{second}"]').click()
    section = page.locator("#transcript section.turn")
    expect(section).to_have_attribute("data-status", "completed")
    expect(page.locator("input[data-answer-for]")).to_have_count(0)
    state = kun.settled(thread)
    expect(page.locator("body")).to_have_attribute("data-last-seq", str(kun.last_seq(thread)))
    shot(page, "answered")
    answers = [(i["id"], i["status"], i["answer"]) for i in _items(state, "user_input")]
    assert answers == [(first, "answered", "b.py"), (second, "answered", "it reads b")]
    same_items(page, state)


def test_a_denied_command_does_not_run_and_a_write_shows_its_diff(
    page: Page, kun: KunServer, provider: FakeProvider, shot: Shot
) -> None:
    provider.enqueue(
        tool_reply("write_file", {"path": "c.py", "content": "print('c')\n"}),
        tool_reply("bash", {"command": "touch ran.txt"}, call_id="call_1"),
        text_reply("as you wish"),
    )
    thread = kun.new_thread(approval_policy="on-request")
    open_thread(page, thread)
    kun.start_turn(thread, "write c.py, then touch ran.txt")
    deny = page.locator("button[data-deny]")
    expect(deny).to_have_count(1)
    asked = kun.state(thread)["pending_approvals"][0]
    expect(deny).to_have_attribute("data-deny", asked)
    diff = page.locator('article[data-type="tool_result"] pre.diff')
    expect(diff).to_contain_text("+print('c')")
    shot(page, "asked")
    deny.click()
    section = page.locator("#transcript section.turn")
    expect(section).to_have_attribute("data-status", "completed")
    expect(page.locator("button[data-deny], button[data-approve]")).to_have_count(0)
    state = kun.settled(thread)
    expect(page.locator("body")).to_have_attribute("data-last-seq", str(kun.last_seq(thread)))
    shot(page, "denied")
    assert [(i["id"], i["status"]) for i in _items(state, "approval")] == [(asked, "denied")]
    assert not (kun.workspace / "ran.txt").exists()
    assert (kun.workspace / "c.py").read_text() == "print('c')\n"
    expect(page.locator(f'article[data-item-id="{asked}"]')).to_contain_text("denied")
    same_items(page, state)


def test_an_approval_answered_in_one_tab_is_gone_from_the_other(
    page: Page, kun: KunServer, provider: FakeProvider, shot: Shot
) -> None:
    call = tool_reply("bash", {"command": "echo from-one-tab"})
    provider.enqueue(call, text_reply("ran once"))
    thread = kun.new_thread(approval_policy="on-request")
    other = page.context.new_page()
    for tab in (page, other):
        open_thread(tab, thread)
    kun.start_turn(thread, "run it")
    for tab in (page, other):
        expect(tab.locator("button[data-approve]")).to_have_count(1)
    shot(other, "other-asked")
    page.locator("button[data-approve]").click()
    for tab in (page, other):
        expect(tab.locator("#transcript section.turn")).to_have_attribute(
            "data-status", "completed"
        )
        expect(tab.locator("button[data-approve], button[data-deny]")).to_have_count(0)
    state = kun.settled(thread)
    shot(other, "other-done")
    for tab in (page, other):
        expect(tab.locator("body")).to_have_attribute("data-last-seq", str(kun.last_seq(thread)))
        same_items(tab, state)
    assert [i["status"] for i in _items(state, "approval")] == ["approved"]
    outputs = [i["output"] for i in _items(state, "tool_result")]
    assert len(outputs) == 1 and outputs[0].startswith("from-one-tab\n")


def test_an_approval_waiting_across_a_restart_is_answered_from_the_page(
    page: Page, kun: KunServer, provider: FakeProvider, shot: Shot
) -> None:
    call = tool_reply("bash", {"command": "echo after-restart"})
    provider.enqueue(call, text_reply("ran after the restart"))
    thread = kun.new_thread(approval_policy="on-request")
    open_thread(page, thread)
    kun.start_turn(thread, "run it")
    approve = page.locator("button[data-approve]")
    expect(approve).to_have_count(1)
    asked = kun.state(thread)["pending_approvals"][0]
    kun.restart()
    expect(page.locator("#connection")).to_have_attribute("data-state", "open", timeout=10_000)
    expect(approve).to_have_attribute("data-approve", asked)
    shot(page, "still-asked")
    approve.click()
    expect(page.locator("#transcript section.turn")).to_have_attribute("data-status", "completed")
    state = kun.settled(thread)
    expect(page.locator("body")).to_have_attribute("data-last-seq", str(kun.last_seq(thread)))
    shot(page, "ran")
    outputs = [i["output"] for i in _items(state, "tool_result")]
    assert len(outputs) == 1 and outputs[0].startswith("after-restart\n")
    same_items(page, state)
