"""Titles: the first prompt titles a thread at once; the user's title stays."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from kun.contracts import events as ev
from kun.contracts.threads import ThreadSettings
from kun.domain.titles import may_retitle, title_changes, title_from_prompt, title_holder
from kun.model.scripted import text_reply
from kun.store.jsonl import JsonlEventStore
from tests.runtime.support import harness

pytestmark = pytest.mark.anyio


def test_a_title_is_the_first_line_that_says_something_cut_at_a_word() -> None:
    assert title_from_prompt("\n\n  fix   the\tbuild \nand more") == "fix the build"
    long = "please refactor the payment reconciliation module so that it " * 3
    title = title_from_prompt(long)
    assert len(title) <= 60 and title.endswith("…") and not title.endswith(" …")
    assert long.startswith(title[:-1])


def test_who_may_replace_a_title() -> None:
    fresh = ThreadSettings()
    by_prompt = msgspec.structs.replace(fresh, title="x", title_source="prompt")
    by_model = msgspec.structs.replace(fresh, title="x", title_source="model")
    by_user = msgspec.structs.replace(fresh, title="x", title_source="user", title_auto=False)
    legacy_user = msgspec.structs.replace(fresh, title="x", title_auto=False)
    assert title_holder(fresh) is None and title_holder(legacy_user) == "user"
    assert may_retitle(fresh, "prompt") and not may_retitle(by_prompt, "prompt")
    assert may_retitle(by_prompt, "model") and may_retitle(by_model, "model")
    assert not may_retitle(by_model, "prompt")
    for user in (by_user, legacy_user):
        assert not may_retitle(user, "model") and not may_retitle(user, "prompt")
        assert may_retitle(user, "user")
    assert title_changes(fresh, "Mine", "user") == {
        "title": "Mine",
        "title_source": "user",
        "title_auto": False,
    }
    assert title_changes(fresh, "   ", "user") == {}


async def test_the_first_prompt_titles_the_thread_before_the_turn_starts(tmp_path: Path) -> None:
    script = [text_reply("one"), text_reply("two")]
    async with harness(tmp_path, script) as h:
        await h.run("Why does the nightly build fail?\nHere is the log: ...")
        await h.run("and now something else")
        settings = h.state().settings
        assert settings.title == "Why does the nightly build fail?"
        assert settings.title_source == "prompt"
        events = list(JsonlEventStore(h.home).read(h.thread_id))
        updates = [e for e in events if isinstance(e, ev.ThreadUpdated)]
        assert len(updates) == 1 and isinstance(events[2], ev.TurnStarted)
        assert events[1] == updates[0]


async def test_a_title_the_user_set_is_never_replaced(tmp_path: Path) -> None:
    async with harness(tmp_path, [text_reply("one")]) as h:
        assert await h.service.retitle(h.thread_id, "Nightly build", "user")
        await h.run("Why does the nightly build fail?")
        assert not await h.service.retitle(h.thread_id, "A model's idea", "model")
        settings = h.state().settings
        assert (settings.title, settings.title_source) == ("Nightly build", "user")


async def test_a_model_title_replaces_the_prompt_title(tmp_path: Path) -> None:
    async with harness(tmp_path, [text_reply("one")]) as h:
        await h.run("Why does the nightly build fail?")
        assert await h.service.retitle(h.thread_id, "Nightly build failure", "model")
        assert h.state().settings.title_source == "model"
