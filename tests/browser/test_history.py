"""The thread's history from the page, in headless Chromium against a real
``kun serve``: the thread as it was at a seq (``?until=``, read only, and
the time slider moved from the keyboard, a fork from there); a rewind that puts the files
back, and its undo; a fork that opens the new thread."""

from __future__ import annotations

import re

import pytest

from kun.model.scripted import text_reply, tool_reply
from kun.testing.fake_provider import FakeProvider
from tests.browser.conftest import Shot
from tests.browser.kunserver import KunServer
from tests.browser.pages import same_items

sync_api = pytest.importorskip("playwright.sync_api")
expect = sync_api.expect
Page = sync_api.Page

pytestmark = pytest.mark.slow


def _two_turns(kun: KunServer, provider: FakeProvider) -> tuple[str, list[str], int]:
    """A thread with two finished turns (the second writes ``d.txt``), their
    ids and the seq that ended the first."""
    write = tool_reply("write_file", {"path": "d.txt", "content": "from turn two\n"})
    provider.enqueue(text_reply("first answer"), write, text_reply("second answer"))
    thread = kun.new_thread()
    turns = []
    for text in ("first question", "second question"):
        turns.append(kun.start_turn(thread, text))
        kun.settled(thread)
    ended = next(e["seq"] for e in kun.log(thread) if e["kind"] == "turn_completed")
    return thread, turns, ended


def test_the_past_is_read_only_the_slider_moves_through_it_and_forks_from_it(
    page: Page, kun: KunServer, provider: FakeProvider, shot: Shot
) -> None:
    thread, turns, ended = _two_turns(kun, provider)
    last = kun.last_seq(thread)
    page.goto(f"/threads/{thread}?until={ended}")
    expect(page.locator("body")).to_have_attribute("data-last-seq", str(ended))
    sections = page.locator("#transcript section.turn")
    expect(sections).to_have_count(1)
    expect(sections).to_have_attribute("data-turn-id", turns[0])
    expect(page.locator("#prompt")).to_be_disabled()
    expect(page.locator("#send")).to_be_disabled()
    expect(page.locator("#until-label")).to_contain_text(str(ended))
    shot(page, "past")
    page.goto(f"/threads/{thread}")
    expect(page.locator("body")).to_have_attribute("data-last-seq", str(last))
    expect(sections).to_have_count(2)
    expect(page.locator("#prompt")).to_be_enabled()
    slider = page.locator("#until")
    expect(slider).to_have_attribute("max", str(last))
    slider.focus()
    for _ in range(last - ended):
        page.keyboard.press("ArrowLeft")
    expect(page).to_have_url(re.compile(rf"\?until={ended}$"))
    expect(page.locator("body")).to_have_attribute("data-last-seq", str(ended))
    expect(sections).to_have_count(1)
    expect(page.locator("#prompt")).to_be_disabled()
    shot(page, "slid")
    page.go_back()
    expect(sections).to_have_count(2)
    expect(page.locator("#prompt")).to_be_enabled()
    page.go_forward()
    expect(sections).to_have_count(1)
    fork = page.locator("#fork")
    expect(fork).to_contain_text(str(ended))
    fork.click()
    expect(page).to_have_url(re.compile(r"/threads/thr_[0-9a-z]+$"))
    forked = page.url.rsplit("/", 1)[-1]
    assert forked != thread
    expect(page.locator("body")).to_have_attribute("data-mode", "live")
    expect(sections).to_have_count(1)
    shot(page, "forked-at-seq")
    state = kun.state(forked)
    assert state["forked_from"] == {"thread_id": thread, "seq": ended}
    assert [t["turn_id"] for t in state["turns"]] == [turns[0]]


def test_a_rewind_its_undo_and_a_fork_from_the_page(
    page: Page, kun: KunServer, provider: FakeProvider, shot: Shot
) -> None:
    written = kun.workspace / "d.txt"
    written.unlink(missing_ok=True)
    thread, turns, _ = _two_turns(kun, provider)
    assert written.read_text() == "from turn two\n"
    page.goto(f"/threads/{thread}")
    sections = page.locator("#transcript section.turn")
    expect(sections).to_have_count(2)
    page.locator("select#rewind-turn").select_option(turns[1])
    page.locator("#rewind-files").check()
    page.locator("#rewind").click()
    expect(sections).to_have_count(1)
    assert not written.exists()
    expect(sections).to_have_attribute("data-turn-id", turns[0])
    state = kun.state(thread)
    assert state["turns"][1]["hidden_by"] is not None
    expect(page.locator("body")).to_have_attribute("data-last-seq", str(kun.last_seq(thread)))
    same_items(page, state)
    shot(page, "rewound")
    page.locator("#undo").click()
    expect(sections).to_have_count(2)
    assert written.read_text() == "from turn two\n"
    state = kun.state(thread)
    assert [t.get("hidden_by") for t in state["turns"]] == [None, None]
    expect(page.locator("body")).to_have_attribute("data-last-seq", str(kun.last_seq(thread)))
    same_items(page, state)
    shot(page, "undone")
    page.locator("#fork").click()
    expect(page).not_to_have_url(re.compile(rf"/threads/{thread}$"))
    forked = page.url.rsplit("/", 1)[-1]
    expect(sections).to_have_count(2)
    expect(page.locator("body")).to_have_attribute("data-last-seq", str(kun.last_seq(forked)))
    shot(page, "forked")
    state = kun.state(forked)
    assert state["forked_from"]["thread_id"] == thread
    same_items(page, state)
    assert "second answer" in kun.transcript(forked)


def test_the_rewind_choices_number_turns_as_kun_replay_does(
    page: Page, kun: KunServer, provider: FakeProvider, shot: Shot
) -> None:
    """Turn N there is turn N of ``kun rewind T N`` and ``/rewind N``:
    hidden turns keep their numbers, and the choice hides N and later."""
    thread, turns, _ = _two_turns(kun, provider)
    rewound = kun.client.post(f"/v1/threads/{thread}/rewind", json={"before_turn": turns[1]})
    assert rewound.status_code == 200, rewound.text
    provider.enqueue(text_reply("third answer"))
    kun.start_turn(thread, "third question")
    kun.settled(thread)
    page.goto(f"/threads/{thread}")
    choices = page.locator("select#rewind-turn option")
    expect(choices).to_have_text(
        ["Turn 1 and later: first question", "Turn 3 and later: third question"]
    )
    shot(page, "numbered-as-replay")
