"""A model-written thread title, in the background (SPEC §7.6).

The first prompt titles a thread at once (:mod:`kun.domain.titles`); a
:class:`Titler` then asks the turn's model for a better one while the first
turn runs: one short request, no tools, a few output tokens. The title is
written only while it may still be improved: no turn of the thread has
completed (by then the person has read the thread under its current title,
and a title changing under them is a surprise) and the current title is
automatic (placeholder, prompt or model: never the user's). Both are checked
when the request starts and again right before writing, since the user may
have renamed the thread, or the turn ended, while the model answered.

It is a nicety: a failure (model error, timeout, blank answer) leaves the
title as it was, logged, never shown as an error, and never fails the turn.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import anyio

from kun.contracts.items import UserMessage
from kun.contracts.model import ErrorChunk, ModelRequest, TextDeltaChunk
from kun.domain.state import ThreadState
from kun.domain.titles import TITLE_WIDTH, may_retitle, title_from_prompt
from kun.model.port import ModelClient

if TYPE_CHECKING:
    from kun.runtime.service import TurnService

__all__ = ["TITLE_INSTRUCTION", "Titler", "may_model_title", "title_from_reply"]

_log = logging.getLogger(__name__)

TITLE_INSTRUCTION = (
    "Write a short title (at most 6 words) for a conversation that starts with the "
    "user's message below. Use the language of the message. Reply with the title "
    "only: no quotes, no trailing punctuation, no explanation."
)
_TRIM = "\"'`*#.!  \u201c\u201d\u2018\u2019\u00ab\u00bb\u300c\u300d\u3002\uff01"
"""Quotes, emphasis and closing punctuation a model wraps a title in."""
_PROMPT_CHARS = 4000


def may_model_title(state: ThreadState) -> bool:
    """Whether a model title may still be written: no turn completed and the
    title is automatic."""
    if any(turn.status == "completed" for turn in state.turns):
        return False
    return may_retitle(state.settings, "model")


def title_from_reply(text: str) -> str:
    """The title in a model's reply: its first non-blank line, without
    quotes, a ``Title:`` label or trailing punctuation, cut to the title
    width (``""``: nothing usable)."""
    line = title_from_prompt(text, width=10 * TITLE_WIDTH)
    if line[:6].lower() == "title:":
        line = line[6:]
    line = line.strip(_TRIM)
    return title_from_prompt(line)


class Titler:
    """Titles a new thread from its first prompt. ``max_tokens`` bounds the
    reply (room for a few words, and for a model that reasons anyway:
    the request asks for reasoning ``off``, which some models ignore);
    ``timeout`` (seconds) gives up on a slow model."""

    def __init__(self, *, max_tokens: int = 128, timeout: float = 30.0) -> None:
        self.max_tokens = max_tokens
        self.timeout = timeout

    async def __call__(
        self, service: TurnService, thread_id: str, model: ModelClient, prompt: str
    ) -> bool:
        """Ask ``model`` for a title and write it as ``thread_updated``
        (``title_source`` ``model``) when it still may; returns whether it
        was written. Never raises but on cancellation."""
        try:
            if not may_model_title(service.state(thread_id)):
                return False
            title = ""
            with anyio.move_on_after(self.timeout):
                title = await self._ask(model, prompt)
            if not title:
                _log.info("no model title for thread %s (blank reply or timeout)", thread_id)
                return False
            if not may_model_title(service.state(thread_id)):
                return False
            return await service.retitle(thread_id, title, "model")
        except Exception:
            _log.warning("model title for thread %s failed", thread_id, exc_info=True)
            return False

    async def _ask(self, model: ModelClient, prompt: str) -> str:
        request = ModelRequest(
            system_prompt=TITLE_INSTRUCTION,
            history=(UserMessage(id="title_prompt", text=prompt[:_PROMPT_CHARS]),),
            max_tokens=self.max_tokens,
            reasoning_effort="off",
        )
        parts: list[str] = []
        async for chunk in model.stream(request):
            if isinstance(chunk, TextDeltaChunk):
                parts.append(chunk.text)
            elif isinstance(chunk, ErrorChunk):
                raise RuntimeError(f"{chunk.code}: {chunk.message}")
        return title_from_reply("".join(parts))
