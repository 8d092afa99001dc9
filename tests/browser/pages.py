"""What the browser tests read off the thread page (the DOM contract in the
web view's docstring): the items as rendered, compared with the log's
projection."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from playwright.sync_api import Page


def open_thread(page: Page, thread_id: str) -> None:
    """Open the thread's page and wait until it follows the live stream."""
    from playwright.sync_api import expect

    page.goto(f"/threads/{thread_id}")
    expect(page.locator("#connection")).to_have_attribute("data-state", "open")


def words(text: str) -> str:
    """Text with its whitespace runs made single spaces: the page lays text
    out, the log keeps it as written."""
    return " ".join(text.split())


def rendered_items(page: Page) -> list[dict[str, str]]:
    """Every ``article`` of the transcript: its id, type, status and the
    text of its ``.body``, in page order."""
    items: list[dict[str, str]] = page.eval_on_selector_all(
        "#transcript section.turn article",
        """articles => articles.map(a => ({
            id: a.dataset.itemId, type: a.dataset.type, status: a.dataset.status,
            turn: a.closest('section.turn').dataset.turnId,
            body: (a.querySelector('.body') || {innerText: ''}).innerText,
        }))""",
    )
    return items


def projected_items(state: dict[str, Any]) -> list[dict[str, str]]:
    """The same for the log's projection (``GET /v1/threads/{id}``), its
    visible turns (a rewind hides some); the body is the text of the items
    that are text (messages, replies)."""
    return [
        {
            "id": item["id"],
            "type": item["type"],
            "status": item.get("status", "completed"),
            "turn": turn["turn_id"],
            "body": item.get("text", ""),
        }
        for turn in state["turns"]
        if turn.get("hidden_by") is None
        for item in turn["items"]
    ]


def same_items(page: Page, state: dict[str, Any]) -> None:
    """The page shows the projection's items, each once, in order, with the
    same status, and every message or reply with its exact text."""
    shown = rendered_items(page)
    projected = projected_items(state)
    keys = ("id", "type", "status", "turn")
    assert [{k: i[k] for k in keys} for i in shown] == [{k: i[k] for k in keys} for i in projected]
    for got, want in zip(shown, projected, strict=True):
        if want["type"] in ("user_message", "assistant_text"):
            assert words(got["body"]) == words(want["body"]), (got, want)
