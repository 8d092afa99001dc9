"""Tool-call ids and tool names as a wire format accepts them.

The log keeps every id and name exactly as the model that produced it wrote
it; a thread that moves between providers then carries ids one of them
refuses: ``call_0`` repeated across steps (Anthropic: "tool_use ids must be
unique"; Responses would pair two outputs with one call), Kimi's
``functions.read_file:1`` (Anthropic: ``^[a-zA-Z0-9_-]+$``), vLLM's 46
characters (OpenAI chat completions: at most 40), and names a model made up
(``functions.read_file``, ``multi_tool_use.parallel``), which OpenAI refuses
in every later request. So ids and names are mapped here, per format, when a
request is built; the log never changes.

Ids (:class:`CallIds`, one per history projection): an id the format
accepts and no earlier call of the history used is sent as it is. Any other
is rewritten to ``<stem>_<hash>``: the stem is the id with the characters
the format refuses replaced by ``_``, cut so the whole fits, and the hash is
8 hex digits of SHA-256 over the id (and a counter when that name is taken
too). The mapping is a fold over the history in order: an id depends only
on the calls before it, so earlier ids never change when later calls
arrive, the same history always gives the same ids, and the cache prefix of
a growing thread stays byte-stable. A later call whose own id equals an
earlier rewritten one is the one renamed.

Each format's rule (:data:`ID_RULES`): chat completions takes any printable
ASCII up to 40 characters (OpenAI's limit; Kimi's ids go back to Kimi
unchanged); Responses and Anthropic take ``[a-zA-Z0-9_-]``, up to 64
characters (Responses' limit; Anthropic documents none and relays use 64).
Gemini pairs calls and responses by name and order and is sent no id; its
rule is Anthropic's, for the ids kun keeps in its own projection.

Names (:func:`wire_tool_name`): every format takes ``^[a-zA-Z0-9_-]{1,64}$``.
A name outside it becomes ``<stem>_<hash>`` (6 hex digits): the call and its
error result stay paired and the model can still read what it called, and
the suffix keeps it from ever matching a real tool (``read.file`` does not
turn into ``read_file``). Valid names, hallucinated or not, are kept. The
Kimi dialect also keeps Moonshot's builtin names (``$web_search``:
``$`` and a valid name), which Moonshot matches by name; for every other
provider they are mapped like any refused name.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

__all__ = ["ID_RULES", "CallIds", "IdRule", "wire_tool_name"]


class IdRule:
    """What a format accepts as a tool-call id: ``allowed`` is a character
    class (regex, without brackets), ``max_length`` in characters."""

    __slots__ = ("_refused", "_valid", "max_length")

    def __init__(self, allowed: str, max_length: int) -> None:
        self.max_length = max_length
        self._valid = re.compile(f"[{allowed}]{{1,{max_length}}}")
        self._refused = re.compile(f"[^{allowed}]")

    def accepts(self, call_id: str) -> bool:
        return self._valid.fullmatch(call_id) is not None

    def stem(self, call_id: str, room: int) -> str:
        """``call_id`` with refused characters replaced by ``_``, cut to ``room``."""
        return self._refused.sub("_", call_id)[:room]


_SAFE = "a-zA-Z0-9_-"
ID_RULES: dict[str, IdRule] = {
    "chat_completions": IdRule("\\x21-\\x7e", 40),
    "responses": IdRule(_SAFE, 64),
    "messages": IdRule(_SAFE, 64),
    "gemini": IdRule(_SAFE, 64),
}

_HASH = 8
_NAME = IdRule(_SAFE, 64)
_NAME_HASH = 6


class CallIds:
    """The wire ids of one history's calls, in history order (see the
    module docstring). :meth:`assign` maps the calls of one step; with
    ``keep=False`` (the step still open) nothing is remembered."""

    __slots__ = ("_rule", "_used")

    def __init__(self, rule: IdRule) -> None:
        self._rule = rule
        self._used: set[str] = set()

    def assign(self, call_ids: Sequence[str], *, keep: bool = True) -> list[str]:
        """The wire ids of one step's calls. Costs O(len(call_ids)): the
        ids of the history before are only looked up, never copied."""
        taken: set[str] = set()
        wire = []
        for call_id in call_ids:
            mapped = self._map(call_id, taken)
            taken.add(mapped)
            wire.append(mapped)
        if keep:
            self._used |= taken
        return wire

    def _map(self, call_id: str, taken: set[str]) -> str:
        rule, used = self._rule, self._used
        if call_id not in used and call_id not in taken and rule.accepts(call_id):
            return call_id
        stem = rule.stem(call_id, rule.max_length - _HASH - 1)
        attempt = 0
        while True:
            salt = f"{call_id}\0{attempt}" if attempt else call_id
            candidate = f"{stem}_{_digest(salt, _HASH)}" if stem else _digest(salt, _HASH)
            if candidate not in used and candidate not in taken:
                return candidate
            attempt += 1


def wire_tool_name(name: str, *, builtins: bool = False) -> str:
    """``name`` if every format accepts it (or, with ``builtins``, it is a
    Moonshot builtin's), else a recognisable stand-in."""
    if _NAME.accepts(name) or (builtins and name[:1] == "$" and _NAME.accepts(name[1:])):
        return name
    stem = _NAME.stem(name, _NAME.max_length - _NAME_HASH - 1) or "tool"
    return f"{stem}_{_digest(name, _NAME_HASH)}"


def _digest(text: str, length: int) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:length]
