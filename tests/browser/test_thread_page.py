"""The thread page in headless Chromium against a real ``kun serve``: a
finished thread, and a long one, load as their logs say; a turn streams to completion and the
page ends up with exactly the log's items and text; a server restarted
under the page mid-turn is followed again, every event shown once."""

from __future__ import annotations

import signal
import time

import msgspec
import pytest

from kun.contracts.model import CompletedChunk, ReasoningDeltaChunk, TextDeltaChunk, UsageChunk
from kun.contracts.usage import UsageSnapshot
from kun.model.scripted import text_reply
from kun.testing.fake_provider import FakeProvider, FakeResponse
from kun.testing.logbuilder import LogBuilder
from tests.browser.conftest import Shot
from tests.browser.kunserver import KunServer
from tests.browser.pages import rendered_items, same_items, words

sync_api = pytest.importorskip("playwright.sync_api")
expect = sync_api.expect
Page = sync_api.Page

pytestmark = pytest.mark.slow

WORDS = [f"word{n:02d} " for n in range(40)]
REPLY = "".join(WORDS).strip()
LONG_TURNS = 200
LONG_PIECES = 40
PREVIEWS_SECONDS = 0.3
"""Killed this soon after its first preview, a reply has no durable text yet
(the log merges an item's fragments for up to a second)."""


def _slow_reply(delay: float) -> FakeResponse:
    """``REPLY``, one word per SSE event, ``delay`` seconds apart."""
    chunks = (*(TextDeltaChunk(text=w) for w in WORDS), CompletedChunk(stop_reason="stop"))
    return FakeResponse(chunks=chunks, per_event=True, piece_delay=delay)


def _reply_body(page: Page) -> str:
    bodies = [i["body"] for i in rendered_items(page) if i["type"] == "assistant_text"]
    return words(" ".join(bodies))


def test_a_finished_thread_loads_as_its_log_says(
    page: Page, kun: KunServer, provider: FakeProvider, shot: Shot
) -> None:
    usage = UsageSnapshot(prompt_tokens=321, completion_tokens=54, cache_hit_tokens=210)
    chunks = (
        ReasoningDeltaChunk(text="Reading a.py first."),
        TextDeltaChunk(text="It prints **a** and then *b*."),
        UsageChunk(usage=usage),
        CompletedChunk(stop_reason="stop"),
    )
    provider.enqueue(FakeResponse(chunks=chunks))
    thread = kun.new_thread()
    turn = kun.start_turn(thread, "what does a.py print?")
    state = kun.settled(thread)
    page.goto(f"/threads/{thread}")
    expect(page.locator("#connection")).to_have_attribute("data-state", "open")
    expect(page.locator("body")).to_have_attribute("data-last-seq", str(kun.last_seq(thread)))
    shot(page, "loaded")
    section = page.locator("#transcript section.turn")
    expect(section).to_have_count(1)
    expect(section).to_have_attribute("data-turn-id", turn)
    expect(section).to_have_attribute("data-status", "completed")
    shown = rendered_items(page)
    assert [(i["id"], i["type"]) for i in shown] == [
        (i["id"], i["type"]) for i in state["turns"][0]["items"]
    ]
    assert words(shown[0]["body"]) == "what does a.py print?"
    reply = page.locator('#transcript article[data-type="assistant_text"] .body')
    expect(reply.locator("strong")).to_have_text("a")
    expect(reply.locator("em")).to_have_text("b")
    assert words(reply.inner_text()) == "It prints a and then b."
    reasoning = page.locator('#transcript article[data-type="assistant_reasoning"] details')
    expect(reasoning).not_to_have_attribute("open", "")
    expect(reasoning).to_contain_text("Reading a.py first.")
    shown_usage = words(page.locator("#usage").inner_text())
    assert state["usage"]["prompt_tokens"] == 321
    for number in ("321", "54", "210"):
        assert number in shown_usage.split(" "), shown_usage
    expect(page.locator("#interrupt")).to_be_disabled()


def test_a_turn_streams_to_completion_as_the_log_has_it(
    page: Page, kun: KunServer, provider: FakeProvider, shot: Shot
) -> None:
    provider.enqueue(_slow_reply(0.04))
    thread = kun.new_thread()
    page.goto(f"/threads/{thread}")
    expect(page.locator("#connection")).to_have_attribute("data-state", "open")
    cost = page.locator("#usage dt:has-text('Cost') + dd")
    expect(cost).to_have_text("$0.00")
    turn = kun.start_turn(thread, "count to forty")
    section = page.locator(f'#transcript section.turn[data-turn-id="{turn}"]')
    expect(section).to_have_attribute("data-status", "running")
    partial = _reply_body(page)
    deadline = time.monotonic() + 5
    while not partial and time.monotonic() < deadline:
        partial = _reply_body(page)
    shot(page, "streaming")
    assert partial and partial != REPLY and REPLY.startswith(partial.split(" ")[0])
    expect(section).to_have_attribute("data-status", "completed")
    expect(cost).to_have_text("cost unknown")
    state = kun.settled(thread)
    expect(page.locator("body")).to_have_attribute("data-last-seq", str(kun.last_seq(thread)))
    shot(page, "completed")
    same_items(page, state)
    assert _reply_body(page) == REPLY
    replayed = kun.transcript(thread)
    assert replayed.count("word00") == 1 and REPLY in words(replayed)


@pytest.mark.parametrize(
    ("sig", "durable"),
    [
        (signal.SIGTERM, True),
        (signal.SIGKILL, True),
        (signal.SIGKILL, False),
    ],
    ids=["sigterm", "sigkill", "sigkill-previews-only"],
)
def test_a_restart_mid_turn_is_followed_with_every_event_once(
    page: Page,
    kun: KunServer,
    provider: FakeProvider,
    shot: Shot,
    sig: signal.Signals,
    durable: bool,
) -> None:
    """``durable``: killed once some of the reply is in the log file, else
    while it is only previewed."""
    provider.enqueue(_slow_reply(0.1), FakeResponse(chunks=tuple(text_reply("back again"))))
    thread = kun.new_thread()
    page.goto(f"/threads/{thread}")
    expect(page.locator("#connection")).to_have_attribute("data-state", "open")
    first = kun.start_turn(thread, "count slowly")
    expect(page.locator('#transcript article[data-type="assistant_text"]')).to_have_count(1)
    log = kun.home / "threads" / thread / "events.jsonl"
    if durable:
        deadline = time.monotonic() + 10
        while '"assistant_text_delta"' not in log.read_text():
            assert time.monotonic() < deadline, "no text reached the log"
            time.sleep(0.05)
    else:
        time.sleep(PREVIEWS_SECONDS)
    shot(page, "before-restart")
    kun.stop(sig)
    if not durable and '"assistant_text_delta"' in log.read_text():
        pytest.skip("the text was durable before the kill: not the previews-only case")
    expect(page.locator("#connection")).not_to_have_attribute("data-state", "open")
    shot(page, "server-down")
    kun.start()
    state = kun.settled(thread)
    ended = state["turns"][0]["status"]
    assert state["turns"][0]["turn_id"] == first and ended in ("aborted", "failed")
    connection = page.locator("#connection")
    expect(connection).to_have_attribute("data-state", "open", timeout=10_000)
    expect(page.locator("body")).to_have_attribute("data-last-seq", str(kun.last_seq(thread)))
    expect(page.locator(f'section.turn[data-turn-id="{first}"]')).to_have_attribute(
        "data-status", ended
    )
    shot(page, "resumed")
    same_items(page, state)
    second = kun.start_turn(thread, "again")
    expect(page.locator(f'section.turn[data-turn-id="{second}"]')).to_have_attribute(
        "data-status", "completed"
    )
    state = kun.settled(thread)
    expect(page.locator("body")).to_have_attribute("data-last-seq", str(kun.last_seq(thread)))
    shot(page, "after")
    same_items(page, state)


def test_a_long_thread_loads_whole_and_once(
    page: Page, kun: KunServer, provider: FakeProvider, shot: Shot
) -> None:
    """~8,600 backlog events, 1.4 MB of log (more than a stream's 1 MiB
    queue): the page shows every turn and every reply exactly once and
    reaches the log's last seq."""
    thread = f"t_long_{time.monotonic_ns()}"
    builder = LogBuilder(thread)
    builder.create(workspace=str(kun.workspace), model="fake-model")
    for n in range(LONG_TURNS):
        builder.start_turn(f"question {n}")
        builder.assistant_text([f"a{n}.{k} " for k in range(LONG_PIECES)])
        builder.complete()
    path = kun.home / "threads" / thread / "events.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"".join(msgspec.json.encode(e) + b"\n" for e in builder.events))
    page.goto(f"/threads/{thread}")
    expect(page.locator("body")).to_have_attribute(
        "data-last-seq", str(builder.seq), timeout=20_000
    )
    shot(page, "loaded")
    expect(page.locator("#transcript section.turn")).to_have_count(LONG_TURNS)
    same_items(page, kun.state(thread))
